import type { Redis } from "ioredis";
import type { ThreadKeys } from "./keys.js";

/**
 * Lua scripts: every decision that must be atomic across gateways and workers. All of them take the
 * thread's keys in the order of {@link threadKeyList}; scripts that write on behalf of a run are fenced
 * by the lease (a worker that lost its lease changes nothing).
 */

/** The thread keys in the order every script expects them as KEYS[1..11]. */
export function threadKeyList(keys: ThreadKeys): string[] {
  return [
    keys.meta,
    keys.lease,
    keys.transcript,
    keys.inbox,
    keys.inflight,
    keys.state,
    keys.disposition,
    keys.body,
    keys.origin,
    keys.allow,
    keys.toolResults,
  ];
}

const PRELUDE = `
local META, LEASE, TRANSCRIPT, INBOX, INFLIGHT, STATE, DISP, BODY, ORIGIN, ALLOW, TOOLRES =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local function requeue_inflight()
  local ids = redis.call('LRANGE', INFLIGHT, 0, -1)
  for i = #ids, 1, -1 do
    redis.call('LPUSH', INBOX, ids[i])
    redis.call('HSET', STATE, ids[i], 'queued')
  end
  redis.call('DEL', INFLIGHT)
  return #ids
end
-- Takes the lease for run (a fresh start, or a resumption after its worker died and the lease lapsed) and
-- requeues what a dead worker had drained; returns the stop requester (or '') or false when stale.
local function claim(run, lease_ms)
  local current = redis.call('GET', LEASE)
  if current ~= run then
    if current or redis.call('HGET', META, 'run') ~= run then return false end
  end
  redis.call('SET', LEASE, run, 'PX', lease_ms)
  requeue_inflight()
  return redis.call('HGET', META, 'stopBy') or ''
end
-- Moves queued messages of one disposition to the in-flight list, oldest first (only the first with one):
-- a flat list {id1, body1, receivedAt1, id2, ...}.
local function drain(wanted, one)
  local out = {}
  for _, id in ipairs(redis.call('LRANGE', INBOX, 0, -1)) do
    if redis.call('HGET', DISP, id) == wanted then
      redis.call('LREM', INBOX, 1, id)
      redis.call('RPUSH', INFLIGHT, id)
      redis.call('HSET', STATE, id, 'inflight')
      out[#out + 1] = id
      out[#out + 1] = redis.call('HGET', BODY, id)
      out[#out + 1] = redis.call('HGET', ORIGIN, id) or '0'
      if one then break end
    end
  end
  return out
end
local function touch(retention)
  if retention > 0 then
    for i = 1, 11 do
      if i ~= 2 then redis.call('PEXPIRE', KEYS[i], retention) end
    end
  end
end
`;

/**
 * submit: ARGV msgId, bodyJson, defaultDisposition, cap, now, retentionMs, newRunId, startLeaseMs,
 * mentionsBot(1/0), requireMentionWhenIdle(1/0), authorJson, isStopCommand(1/0), channel
 * → {'duplicate'} | {'ignored'} | {'queued', runId, disposition} | {'refused', runId} | {'stop', runId}
 *   | {'started', runId}
 */
const SUBMIT = `${PRELUDE}
local id, body, default_disp = ARGV[1], ARGV[2], ARGV[3]
local cap, now, retention = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local new_run, start_lease = ARGV[7], tonumber(ARGV[8])
local mentions, require_mention, author, is_stop = ARGV[9] == '1', ARGV[10] == '1', ARGV[11], ARGV[12] == '1'
if redis.call('HEXISTS', STATE, id) == 1 then return {'duplicate'} end
local engaged = redis.call('HGET', META, 'engaged') == '1'
local active = redis.call('GET', LEASE)
if not mentions then
  if not engaged then return {'ignored'} end
  if (not active) and require_mention then return {'ignored'} end
end
redis.call('HSET', META, 'lastActivity', now)
if active then
  if is_stop then
    redis.call('HSET', STATE, id, 'command')
    redis.call('HSET', META, 'stopBy', author)
    redis.call('PUBLISH', ARGV[13], cjson.encode({type = 'abort', runId = active, by = cjson.decode(author)}))
    return {'stop', active}
  end
  if redis.call('LLEN', INBOX) + redis.call('LLEN', INFLIGHT) >= cap then
    redis.call('HSET', STATE, id, 'refused')
    return {'refused', active}
  end
  redis.call('RPUSH', INBOX, id)
  redis.call('HSET', STATE, id, 'queued')
  redis.call('HSET', DISP, id, default_disp)
  redis.call('HSET', BODY, id, body)
  redis.call('HSET', ORIGIN, id, now)
  touch(retention)
  return {'queued', active, default_disp}
end
-- Idle: this message starts a run. Messages stranded by a run that died are delivered first.
requeue_inflight()
redis.call('SET', LEASE, new_run, 'PX', start_lease)
redis.call('HSET', META, 'run', new_run, 'engaged', '1', 'requester', author)
redis.call('HDEL', META, 'stopBy')
if redis.call('HEXISTS', META, 'startedBy') == 0 then
  redis.call('HSET', META, 'startedBy', author, 'createdAt', now)
end
redis.call('RPUSH', INBOX, id)
redis.call('HSET', STATE, id, 'queued')
redis.call('HSET', DISP, id, 'prompt')
redis.call('HSET', BODY, id, body)
redis.call('HSET', ORIGIN, id, now)
touch(retention)
return {'started', new_run}
`;

/** setDisposition: ARGV msgId, disposition → 1 if it took effect (still queued, not the run's prompt). */
const SET_DISPOSITION = `${PRELUDE}
local id, disp = ARGV[1], ARGV[2]
if redis.call('HGET', STATE, id) ~= 'queued' then return 0 end
if redis.call('HGET', DISP, id) == 'prompt' then return 0 end
redis.call('HSET', DISP, id, disp)
return 1
`;

/** withdraw: ARGV msgId → 1 if the queued message was removed. */
const WITHDRAW = `${PRELUDE}
local id = ARGV[1]
if redis.call('HGET', STATE, id) ~= 'queued' then return 0 end
redis.call('LREM', INBOX, 1, id)
redis.call('HSET', STATE, id, 'withdrawn')
return 1
`;

/** edit: ARGV msgId, bodyJson → 1 if the queued message's text was replaced. */
const EDIT = `${PRELUDE}
local id = ARGV[1]
if redis.call('HGET', STATE, id) ~= 'queued' then return 0 end
redis.call('HSET', BODY, id, ARGV[2])
return 1
`;

/** stop: ARGV byJson, channel → the active run id, or false when idle. */
const STOP = `${PRELUDE}
local active = redis.call('GET', LEASE)
if not active then return false end
redis.call('HSET', META, 'stopBy', ARGV[1])
redis.call('PUBLISH', ARGV[2], cjson.encode({type = 'abort', runId = active, by = cjson.decode(ARGV[1])}))
return active
`;

/**
 * claim: ARGV runId, leaseMs → {'ok', stopByJson|''} | {'stale'}. Takes the lease for the run a job
 * carries (also after the lease expired, as long as no newer run started) and puts messages a dead
 * worker had drained back at the front of the inbox.
 */
const CLAIM = `${PRELUDE}
local stop_by = claim(ARGV[1], tonumber(ARGV[2]))
if not stop_by then return {'stale'} end
return {'ok', stop_by}
`;

/**
 * start: ARGV runId, leaseMs, steeringMode ('one'|'all') → {'stale'} | {'ok', stopByJson|'', transcript,
 * metaFlat, prompts, steering}: claim, then everything a run needs before its first model request in the
 * same round trip — the transcript, the meta hash (flat field/value list) and, unless a stop is pending, the
 * queued prompts (as drain(prompt, all)) and the loop's initial steering poll (as drain(steer, mode)).
 */
const START = `${PRELUDE}
local stop_by = claim(ARGV[1], tonumber(ARGV[2]))
if not stop_by then return {'stale'} end
local prompts, steering = {}, {}
if stop_by == '' then
  prompts = drain('prompt', false)
  steering = drain('steer', ARGV[3] == 'one')
end
return {'ok', stop_by, redis.call('LRANGE', TRANSCRIPT, 0, -1), redis.call('HGETALL', META), prompts, steering}
`;

/** heartbeat: ARGV runId, leaseMs → 1 while the lease is ours. */
const HEARTBEAT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
`;

/**
 * drain: ARGV runId, disposition, mode ('one'|'all') → false if the lease is lost, else a flat list
 * {id1, body1, receivedAt1, id2, …} moved from the inbox to the in-flight list, oldest first.
 */
const DRAIN = `${PRELUDE}
if redis.call('GET', LEASE) ~= ARGV[1] then return false end
return drain(ARGV[2], ARGV[3] == 'one')
`;

/** ack: ARGV runId, msgId → 1 when the drained message entered the transcript (atomically). */
const ACK = `${PRELUDE}
if redis.call('GET', LEASE) ~= ARGV[1] then return 0 end
local id = ARGV[2]
if redis.call('LREM', INFLIGHT, 1, id) == 0 then return 0 end
redis.call('HSET', STATE, id, 'delivered')
redis.call('RPUSH', TRANSCRIPT, redis.call('HGET', BODY, id))
return 1
`;

/** append: ARGV runId, json… → transcript length, or -1 when the lease is lost. */
const APPEND = `${PRELUDE}
if redis.call('GET', LEASE) ~= ARGV[1] then return -1 end
local n = 0
for i = 2, #ARGV do n = redis.call('RPUSH', TRANSCRIPT, ARGV[i]) end
return n
`;

/** recordToolResult: ARGV runId, toolCallId, json → 1 unless the lease is lost. */
const RECORD_TOOL_RESULT = `${PRELUDE}
if redis.call('GET', LEASE) ~= ARGV[1] then return 0 end
redis.call('HSET', TOOLRES, ARGV[2], ARGV[3])
return 1
`;

/**
 * release: ARGV runId, mode ('natural'|'stopped'), now → {'lost'} | {'pending'} | {'released', id…}.
 * natural: releases only when nothing is queued (else the run goes on). stopped: everything still queued
 * enters the transcript marked not processed (ids returned) and the thread is released.
 */
const RELEASE = `${PRELUDE}
if redis.call('GET', LEASE) ~= ARGV[1] then return {'lost'} end
local out = {'released'}
if ARGV[2] == 'natural' then
  requeue_inflight()
  if redis.call('LLEN', INBOX) > 0 then return {'pending'} end
else
  requeue_inflight()
  for _, id in ipairs(redis.call('LRANGE', INBOX, 0, -1)) do
    redis.call('RPUSH', TRANSCRIPT, redis.call('HGET', BODY, id))
    redis.call('HSET', STATE, id, 'notprocessed')
    out[#out + 1] = id
  end
  redis.call('DEL', INBOX)
end
redis.call('DEL', LEASE)
redis.call('HSET', META, 'run', '', 'lastActivity', ARGV[3])
redis.call('HDEL', META, 'stopBy')
redis.call('DEL', TOOLRES)
return out
`;

/**
 * createApproval: KEYS[12] approval; ARGV fields json-ish pairs, ttlMs → {'created'} | {'exists', status}.
 * Idempotent: a resumed run finds the record its predecessor created.
 */
const CREATE_APPROVAL = `
local key = KEYS[12]
if redis.call('EXISTS', key) == 1 then return {'exists', redis.call('HGET', key, 'status')} end
for i = 2, #ARGV, 2 do redis.call('HSET', key, ARGV[i], ARGV[i + 1]) end
redis.call('HSET', key, 'status', 'pending')
redis.call('PEXPIRE', key, tonumber(ARGV[1]))
return {'created'}
`;

/**
 * decide: KEYS[12] approval; ARGV userId, userJson, decision, now, channel, approvalId, threadId
 * → {'unknown'} | {'forbidden'} | {'expired'} | {'already', status, decidedBy} | {'accepted', status}.
 * First valid decision wins; only the requester and the listed approvers may decide.
 */
const DECIDE = `
local key = KEYS[12]
local user, user_json, decision, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if redis.call('EXISTS', key) == 0 then return {'unknown'} end
local status = redis.call('HGET', key, 'status')
if status ~= 'pending' then return {'already', status, redis.call('HGET', key, 'decidedBy') or ''} end
local allowed = redis.call('HGET', key, 'allowed') or ''
if not string.find(allowed, ',' .. user .. ',', 1, true) then return {'forbidden'} end
if now >= tonumber(redis.call('HGET', key, 'expiresAt')) then
  redis.call('HSET', key, 'status', 'expired', 'decidedAt', now)
  redis.call('PUBLISH', ARGV[5], cjson.encode({type = 'approval', approvalId = ARGV[6], threadId = ARGV[7], status = 'expired'}))
  return {'expired'}
end
local new_status = 'denied'
if decision == 'approve' then new_status = 'approved' elseif decision == 'always' then new_status = 'always' end
redis.call('HSET', key, 'status', new_status, 'decidedBy', user_json, 'decidedAt', now)
if new_status == 'always' then redis.call('SADD', KEYS[10], redis.call('HGET', key, 'tool')) end
redis.call('PUBLISH', ARGV[5], cjson.encode({type = 'approval', approvalId = ARGV[6], threadId = ARGV[7],
  status = new_status, by = cjson.decode(user_json), at = now}))
return {'accepted', new_status}
`;

/** settleApproval: KEYS[12] approval; ARGV status ('expired'|'cancelled'), now → the final status. */
const SETTLE_APPROVAL = `
local key = KEYS[12]
local status = redis.call('HGET', key, 'status')
if not status then return false end
if status ~= 'pending' then return status end
redis.call('HSET', key, 'status', ARGV[1], 'decidedAt', ARGV[2])
return ARGV[1]
`;

/** The scripts by command name, with their number of keys. */
export const SCRIPTS = {
  tlSubmit: { lua: SUBMIT, keys: 11 },
  tlSetDisposition: { lua: SET_DISPOSITION, keys: 11 },
  tlWithdraw: { lua: WITHDRAW, keys: 11 },
  tlEdit: { lua: EDIT, keys: 11 },
  tlStop: { lua: STOP, keys: 11 },
  tlClaim: { lua: CLAIM, keys: 11 },
  tlStart: { lua: START, keys: 11 },
  tlHeartbeat: { lua: HEARTBEAT, keys: 1 },
  tlDrain: { lua: DRAIN, keys: 11 },
  tlAck: { lua: ACK, keys: 11 },
  tlAppend: { lua: APPEND, keys: 11 },
  tlRecordToolResult: { lua: RECORD_TOOL_RESULT, keys: 11 },
  tlRelease: { lua: RELEASE, keys: 11 },
  tlCreateApproval: { lua: CREATE_APPROVAL, keys: 12 },
  tlDecide: { lua: DECIDE, keys: 12 },
  tlSettleApproval: { lua: SETTLE_APPROVAL, keys: 12 },
} as const;

export type ScriptName = keyof typeof SCRIPTS;

type ScriptReply = string | number | null | ScriptReply[];

/** A Redis connection with the scripts defined on it. */
export interface ScriptedRedis {
  redis: Redis;
  run(name: ScriptName, keys: string[], args: (string | number)[]): Promise<ScriptReply>;
}

const defined = new WeakSet<Redis>();

/** Defines the scripts on a connection (once) and returns a typed runner. Uses EVALSHA with reload on NOSCRIPT. */
export function withScripts(redis: Redis): ScriptedRedis {
  if (!defined.has(redis)) {
    for (const [name, script] of Object.entries(SCRIPTS)) {
      redis.defineCommand(name, { numberOfKeys: script.keys, lua: script.lua });
    }
    defined.add(redis);
  }
  const commands = redis as unknown as Record<
    ScriptName,
    (...args: (string | number)[]) => Promise<ScriptReply>
  >;
  return {
    redis,
    run: (name, keys, args) => commands[name].call(redis, ...keys, ...args),
  };
}
