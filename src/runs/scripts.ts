import type { ThreadKeys } from "./keys.js";

/**
 * The Lua side of every decision that must be atomic across gateways and workers. A script names its keys
 * and arguments; {@link defineScript} generates the prelude that binds them (`K.meta`, `A.token`, …), so no
 * script reads `KEYS[n]` or `ARGV[n]` by position and the TypeScript client (thread-scripts.ts) passes a
 * named input object. Scripts that write on behalf of a run are fenced: they compare `A.token` with the
 * lease and answer `{'lost'}` when it is no longer this claim's.
 */

/** The per-thread keys every thread script receives, by name (see {@link ThreadKeys}). */
export const THREAD_KEY_NAMES = [
  "meta",
  "lease",
  "transcript",
  "inbox",
  "inflight",
  "state",
  "disposition",
  "body",
  "origin",
  "allow",
  "calls",
  "approvals",
  "pending",
] as const satisfies readonly (keyof ThreadKeys)[];

export type ThreadKeyName = (typeof THREAD_KEY_NAMES)[number];

/** One script: its keys (the thread's, plus the approval record for approval scripts) and named arguments. */
export interface ScriptSpec<Args extends readonly string[] = readonly string[]> {
  name: string;
  /** True when the script also takes the approval record's key, bound as `K.approval`. */
  approval: boolean;
  args: Args;
  /** True when arguments after the named ones are a list, bound as `REST`. */
  rest: boolean;
  lua: string;
}

const HELPERS = `
-- Retention: every key of the thread but the lease (whose TTL is the liveness) and the approval records
-- (their own TTLs) lives at least the retention period R after the thread's last write, and at most R + W,
-- W = min(60 s, R / 10). A full refresh (touch_all) sets every key to R + W; a hot-path script (touch)
-- sets the keys it wrote to R + W and refreshes all the others only when the last full refresh is older
-- than W, which the meta key tells: only a full refresh sets its TTL (to R + W), so PTTL(meta) >= R means
-- every key the last full refresh set still has at least R to live. A key created since (a script wrote
-- it, so touch sets it; or a drain or requeue created it, so inherit gave it meta's expiry) lives as long.
-- PEXPIRE on a key that does not exist yet is a no-op, so scripts touch after writing.
local function slack(retention)
  return math.min(60000, math.floor(retention / 10))
end
local function touch_all(retention)
  retention = tonumber(retention)
  if not retention or retention <= 0 then return end
  local ttl = retention + slack(retention)
  for name, key in pairs(K) do
    if name ~= 'lease' and name ~= 'approval' then redis.call('PEXPIRE', key, ttl) end
  end
end
-- written: the names of the keys this script wrote (meta excluded: only a full refresh sets its TTL).
local function touch(retention, written)
  retention = tonumber(retention)
  if not retention or retention <= 0 then return end
  if redis.call('PTTL', K.meta) < retention then return touch_all(retention) end
  local ttl = retention + slack(retention)
  for _, name in ipairs(written) do redis.call('PEXPIRE', K[name], ttl) end
end
-- A key a script without a retention argument created (a drain's in-flight list, a requeue's inbox) expires
-- with meta, as if the last full refresh had set it.
local function inherit(key)
  if redis.call('PTTL', key) ~= -1 then return end
  local ttl = redis.call('PTTL', K.meta)
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
end
local function requeue_inflight()
  local ids = redis.call('LRANGE', K.inflight, 0, -1)
  for i = #ids, 1, -1 do
    redis.call('LPUSH', K.inbox, ids[i])
    redis.call('HSET', K.state, ids[i], 'queued')
  end
  redis.call('DEL', K.inflight)
  if #ids > 0 then inherit(K.inbox) end
  return #ids
end
local function holds(token)
  return redis.call('GET', K.lease) == token
end
-- Moves queued messages of one disposition to the in-flight list, oldest first (only the first with one):
-- a flat list {id1, body1, receivedAt1, id2, ...}.
local function drain(wanted, one)
  local out = {}
  for _, id in ipairs(redis.call('LRANGE', K.inbox, 0, -1)) do
    if redis.call('HGET', K.disposition, id) == wanted then
      redis.call('LREM', K.inbox, 1, id)
      redis.call('RPUSH', K.inflight, id)
      redis.call('HSET', K.state, id, 'inflight')
      out[#out + 1] = id
      out[#out + 1] = redis.call('HGET', K.body, id)
      out[#out + 1] = redis.call('HGET', K.origin, id) or '0'
      if one then break end
    end
  end
  if #out > 0 then inherit(K.inflight) end
  return out
end
-- The author's display name of a queued message ('' when unknown).
local function author_name(id)
  local ok, body = pcall(cjson.decode, redis.call('HGET', K.body, id) or '')
  if ok and type(body) == 'table' and type(body.authorName) == 'string' then return body.authorName end
  return ''
end
-- The most urgent queued message a running loop yields to: 'interrupt', else 'steer', else '', and its author.
local function waiting()
  local kind, by = '', ''
  for _, id in ipairs(redis.call('LRANGE', K.inbox, 0, -1)) do
    local d = redis.call('HGET', K.disposition, id)
    if d == 'interrupt' or (d == 'steer' and kind == '') then
      kind, by = d, author_name(id)
      if d == 'interrupt' then break end
    end
  end
  return kind, by
end
-- Tells the worker of the active run at once that a message it yields to is queued (the pub/sub fast path;
-- the disposition itself is the state its heartbeat and drains read again).
local function announce(channel, run, id, disposition)
  if disposition ~= 'steer' and disposition ~= 'interrupt' then return end
  redis.call('PUBLISH', channel, cjson.encode({type = 'inbox', runId = run, disposition = disposition,
    by = author_name(id)}))
end
-- The requester of the latest run may control it; so may approvers (the caller says whether the user is one).
local function may_control(user_id, is_approver)
  if is_approver == '1' then return true end
  local raw = redis.call('HGET', K.meta, 'requester')
  if not raw then return false end
  local ok, requester = pcall(cjson.decode, raw)
  return ok and type(requester) == 'table' and requester.id == user_id
end
`;

/** Builds a script whose prelude binds its keys as `K.<name>` and its arguments as `A.<name>`. */
export function defineScript<const Args extends readonly string[]>(spec: {
  name: string;
  approval?: boolean;
  args: Args;
  rest?: boolean;
  lua: string;
}): ScriptSpec<Args> {
  const keyNames: string[] = [...THREAD_KEY_NAMES, ...(spec.approval ? ["approval"] : [])];
  const keys = keyNames.map((name, i) => `${name} = KEYS[${i + 1}]`).join(", ");
  const args = spec.args.map((name, i) => `${name} = ARGV[${i + 1}]`).join(", ");
  const rest = spec.rest
    ? `local REST = {}\nfor i = ${spec.args.length + 1}, #ARGV do REST[#REST + 1] = ARGV[i] end\n`
    : "";
  return {
    name: spec.name,
    approval: spec.approval ?? false,
    args: spec.args,
    rest: spec.rest ?? false,
    // The name first: MONITOR and SCRIPT listings tell the scripts apart.
    lua: `-- ${spec.name}\nlocal K = {${keys}}\nlocal A = {${args}}\n${rest}${HELPERS}\n${spec.lua}`,
  };
}

/**
 * submit → {'duplicate', runWithoutJob|''} | {'ignored'} | {'queued', run, disposition, {tool…}} | {'refused', run}
 * | {'stopping', run} | {'stopRefused', run} | {'stopIdle'} | {'setting'} | {'started', run}.
 * A setting command (`isSetting`, see thread-settings.ts) stores `setValue` under the meta field `setField`
 * (none when `setField` is empty: an invalid command) and answers {'setting'}; it never queues or starts.
 * A queued reply names the tools whose approval cards still wait (sorted), so the gateway can tell its author
 * without another read.
 * A duplicate of the active run's prompt that no worker took yet names that run, so the gateway re-adds its
 * job (BullMQ dedupes by job id): a decided start always gets its job, even when the first add failed.
 */
export const SUBMIT = defineScript({
  name: "tlSubmit",
  args: [
    "msgId",
    "body",
    "defaultDisposition",
    "cap",
    "now",
    "retention",
    "newRun",
    "startLeaseMs",
    "mentions",
    "requireMention",
    "author",
    "authorId",
    "isApprover",
    "isStop",
    "isSetting",
    "setField",
    "setValue",
    "channel",
  ],
  lua: `
local id = A.msgId
local state = redis.call('HGET', K.state, id)
if state then
  local run = redis.call('HGET', K.meta, 'run') or ''
  if state == 'queued' and run ~= '' and redis.call('HGET', K.disposition, id) == 'prompt'
    and redis.call('EXISTS', K.lease) == 1 then
    return {'duplicate', run}
  end
  return {'duplicate', ''}
end
local engaged = redis.call('HGET', K.meta, 'engaged') == '1'
local active = redis.call('EXISTS', K.lease) == 1
local run = redis.call('HGET', K.meta, 'run') or ''
if active and run == '' then active = false end
if A.mentions ~= '1' then
  if not engaged then return {'ignored'} end
  if (not active) and A.requireMention == '1' then return {'ignored'} end
end
redis.call('HSET', K.meta, 'lastActivity', A.now)
if A.isStop == '1' then
  redis.call('HSET', K.state, id, 'command')
  touch_all(A.retention)
  if not active then return {'stopIdle'} end
  if not may_control(A.authorId, A.isApprover) then return {'stopRefused', run} end
  redis.call('HSET', K.meta, 'stopBy', A.author)
  redis.call('PUBLISH', A.channel, cjson.encode({type = 'abort', runId = run, by = cjson.decode(A.author)}))
  return {'stopping', run}
end
if A.isSetting == '1' then
  redis.call('HSET', K.state, id, 'command')
  if A.setField ~= '' then redis.call('HSET', K.meta, A.setField, A.setValue) end
  touch_all(A.retention)
  return {'setting'}
end
if active then
  if redis.call('LLEN', K.inbox) + redis.call('LLEN', K.inflight) >= tonumber(A.cap) then
    redis.call('HSET', K.state, id, 'refused')
    touch_all(A.retention)
    return {'refused', run}
  end
  redis.call('RPUSH', K.inbox, id)
  redis.call('HSET', K.state, id, 'queued')
  redis.call('HSET', K.disposition, id, A.defaultDisposition)
  redis.call('HSET', K.body, id, A.body)
  redis.call('HSET', K.origin, id, A.now)
  touch_all(A.retention)
  announce(A.channel, run, id, A.defaultDisposition)
  local waiting_tools = redis.call('HVALS', K.pending)
  table.sort(waiting_tools)
  return {'queued', run, A.defaultDisposition, waiting_tools}
end
-- Idle: this message starts a run. Messages stranded by a run that died (drained or still queued) are
-- delivered first and in the order they came: they join this run's prompt batch ahead of this message, or
-- a leftover steer would reach the model after the newer message. The lease holds the start marker
-- (token 0) until a worker claims the run with a token of its own.
requeue_inflight()
for _, leftover in ipairs(redis.call('LRANGE', K.inbox, 0, -1)) do
  redis.call('HSET', K.disposition, leftover, 'prompt')
end
redis.call('SET', K.lease, A.newRun .. '#0', 'PX', tonumber(A.startLeaseMs))
redis.call('HSET', K.meta, 'run', A.newRun, 'engaged', '1', 'requester', A.author, 'runStartedAt', A.now)
redis.call('HDEL', K.meta, 'stopBy')
if redis.call('HEXISTS', K.meta, 'startedBy') == 0 then
  redis.call('HSET', K.meta, 'startedBy', A.author, 'createdAt', A.now)
end
redis.call('RPUSH', K.inbox, id)
redis.call('HSET', K.state, id, 'queued')
redis.call('HSET', K.disposition, id, 'prompt')
redis.call('HSET', K.body, id, A.body)
redis.call('HSET', K.origin, id, A.now)
touch_all(A.retention)
return {'started', A.newRun}
`,
});

/**
 * setDisposition → the previous disposition if it took effect (still queued, not the run's prompt), else 0.
 * A steer or interrupt is announced on `channel` to the worker of the active run.
 */
export const SET_DISPOSITION = defineScript({
  name: "tlSetDisposition",
  args: ["msgId", "disposition", "channel"],
  lua: `
if redis.call('HGET', K.state, A.msgId) ~= 'queued' then return 0 end
local previous = redis.call('HGET', K.disposition, A.msgId) or ''
if previous == 'prompt' then return 0 end
redis.call('HSET', K.disposition, A.msgId, A.disposition)
local run = redis.call('HGET', K.meta, 'run') or ''
if run ~= '' and A.channel ~= '' and previous ~= A.disposition then
  announce(A.channel, run, A.msgId, A.disposition)
end
return previous
`,
});

/** withdraw → 1 if the queued message was removed. */
export const WITHDRAW = defineScript({
  name: "tlWithdraw",
  args: ["msgId"],
  lua: `
if redis.call('HGET', K.state, A.msgId) ~= 'queued' then return 0 end
redis.call('LREM', K.inbox, 1, A.msgId)
redis.call('HSET', K.state, A.msgId, 'withdrawn')
return 1
`,
});

/** edit → 1 if the queued message's text was replaced. */
export const EDIT = defineScript({
  name: "tlEdit",
  args: ["msgId", "body"],
  lua: `
if redis.call('HGET', K.state, A.msgId) ~= 'queued' then return 0 end
redis.call('HSET', K.body, A.msgId, A.body)
return 1
`,
});

/** stop → {'idle'} | {'refused', run} | {'stopping', run}. Only the requester or an approver may stop. */
export const STOP = defineScript({
  name: "tlStop",
  args: ["by", "byId", "isApprover", "channel"],
  lua: `
local run = redis.call('HGET', K.meta, 'run') or ''
if redis.call('EXISTS', K.lease) == 0 or run == '' then return {'idle'} end
if not may_control(A.byId, A.isApprover) then return {'refused', run} end
redis.call('HSET', K.meta, 'stopBy', A.by)
redis.call('PUBLISH', A.channel, cjson.encode({type = 'abort', runId = run, by = cjson.decode(A.by)}))
return {'stopping', run}
`,
});

/**
 * start → {'stale'} | {'ok', token, stopBy|'', transcript, metaFlat, prompts, steering, callsFlat,
 * approvalsFlat, interrupts, transcriptFrom}. Claims the run with a fencing token of its own — a fresh start, a resumption after its
 * worker died, or a takeover from a worker that is paused or stalled (that worker's token stops matching, so
 * it can write nothing more and start no tool) — and answers everything a run needs before its first model
 * request in the same round trip: the transcript, the meta hash, the tool-call records and approval ids of
 * the run so far and, unless a stop is pending, the queued prompts (all) and the loop's first steering poll.
 * Messages a previous claim had drained but not delivered go back to the front of the inbox first.
 * `tail` > 0 answers only the transcript's last `tail` entries (O(tail), whatever the thread's length),
 * `transcriptFrom` being the position of the first one; 0 answers all of it.
 */
export const START = defineScript({
  name: "tlStart",
  args: ["run", "leaseMs", "steeringMode", "tail"],
  lua: `
if redis.call('HGET', K.meta, 'run') ~= A.run then return {'stale'} end
local token = A.run .. '#' .. redis.call('HINCRBY', K.meta, 'fence', 1)
redis.call('SET', K.lease, token, 'PX', tonumber(A.leaseMs))
requeue_inflight()
local stop_by = redis.call('HGET', K.meta, 'stopBy') or ''
local prompts, steering, interrupts = {}, {}, {}
if stop_by == '' then
  prompts = drain('prompt', false)
  interrupts = drain('interrupt', false)
  steering = drain('steer', A.steeringMode == 'one')
end
local from = 0
local tail = tonumber(A.tail) or 0
if tail > 0 then from = math.max(0, redis.call('LLEN', K.transcript) - tail) end
return {'ok', token, stop_by, redis.call('LRANGE', K.transcript, from, -1), redis.call('HGETALL', K.meta),
  prompts, steering, redis.call('HGETALL', K.calls), redis.call('HGETALL', K.approvals), interrupts, from}
`,
});

/**
 * heartbeat → {'lost'} | {'ok', stopBy|'', waiting, waitingBy}: renews the lease while it is this claim's, and
 * reports a stop and the most urgent queued message the loop yields to (interrupt | steer | '').
 */
export const HEARTBEAT = defineScript({
  name: "tlHeartbeat",
  args: ["token", "leaseMs"],
  lua: `
if not holds(A.token) then return {'lost'} end
redis.call('PEXPIRE', K.lease, tonumber(A.leaseMs))
local kind, by = waiting()
return {'ok', redis.call('HGET', K.meta, 'stopBy') or '', kind, by}
`,
});

/**
 * drain → {'lost'} | {'ok', {id1, body1, receivedAt1, …}, waiting, waitingBy}: queued messages moved to the
 * in-flight list, and what still waits (as the heartbeat reports it).
 */
export const DRAIN = defineScript({
  name: "tlDrain",
  args: ["token", "disposition", "mode"],
  lua: `
if not holds(A.token) then return {'lost'} end
local out = drain(A.disposition, A.mode == 'one')
local kind, by = waiting()
return {'ok', out, kind, by}
`,
});

/** ack → {'lost'} | {'ok'}: a drained message enters the transcript, atomically with leaving the in-flight list. */
export const ACK = defineScript({
  name: "tlAck",
  args: ["token", "msgId", "retention"],
  lua: `
if not holds(A.token) then return {'lost'} end
if redis.call('LREM', K.inflight, 1, A.msgId) == 0 then return {'lost'} end
redis.call('HSET', K.state, A.msgId, 'delivered')
redis.call('RPUSH', K.transcript, redis.call('HGET', K.body, A.msgId))
touch(A.retention, {'state', 'transcript'})
return {'ok'}
`,
});

/** append → {'lost'} | {'ok', length}: messages (REST, JSON each) appended to the transcript. */
export const APPEND = defineScript({
  name: "tlAppend",
  args: ["token", "retention"],
  rest: true,
  lua: `
if not holds(A.token) then return {'lost'} end
local n = 0
for _, message in ipairs(REST) do n = redis.call('RPUSH', K.transcript, message) end
touch(A.retention, {'transcript'})
return {'ok', n}
`,
});

/**
 * finishCalls → {'lost'} | {'ok', length}: finished tool calls' "done" records and the messages that follow
 * them (their results), in one step: REST is `records` pairs (callKey, record JSON), then the messages (JSON
 * each) appended to the transcript. A result that entered the transcript has its record, and a recorded
 * result is never appended twice by a resumed run (recovery skips answered calls).
 */
export const FINISH_CALLS = defineScript({
  name: "tlFinishCalls",
  args: ["token", "records", "retention"],
  rest: true,
  lua: `
if not holds(A.token) then return {'lost'} end
local pairs_end = 2 * tonumber(A.records)
for i = 1, pairs_end, 2 do redis.call('HSET', K.calls, REST[i], REST[i + 1]) end
local n = 0
for i = pairs_end + 1, #REST do n = redis.call('RPUSH', K.transcript, REST[i]) end
if n == 0 then n = redis.call('LLEN', K.transcript) end
touch(A.retention, {'calls', 'transcript'})
return {'ok', n}
`,
});

/**
 * recordCall → {'lost'} | {'ok'} | {'exists', record}: writes a tool call's record (callKey → JSON). With
 * `onlyIfAbsent` = '1' (the "executing" record written right before `execute`) an existing record wins and
 * is answered instead, so a call is started at most once per run whatever the workers do.
 */
export const RECORD_CALL = defineScript({
  name: "tlRecordCall",
  args: ["token", "callKey", "record", "onlyIfAbsent", "retention"],
  lua: `
if not holds(A.token) then return {'lost'} end
if A.onlyIfAbsent == '1' then
  local existing = redis.call('HGET', K.calls, A.callKey)
  if existing then return {'exists', existing} end
end
redis.call('HSET', K.calls, A.callKey, A.record)
touch(A.retention, {'calls'})
return {'ok'}
`,
});

/**
 * release → {'lost'} | {'pending'} | {'released', id1, disposition1, …}. natural: releases only when nothing
 * is queued (else the run goes on). stopped: everything still queued enters the transcript marked not
 * processed (ids and dispositions returned, for the marks) and the thread is released.
 */
export const RELEASE = defineScript({
  name: "tlRelease",
  args: ["token", "mode", "now", "retention"],
  lua: `
if not holds(A.token) then return {'lost'} end
local out = {'released'}
requeue_inflight()
if A.mode == 'natural' then
  if redis.call('LLEN', K.inbox) > 0 then return {'pending'} end
else
  for _, id in ipairs(redis.call('LRANGE', K.inbox, 0, -1)) do
    redis.call('RPUSH', K.transcript, redis.call('HGET', K.body, id))
    redis.call('HSET', K.state, id, 'notprocessed')
    out[#out + 1] = id
    out[#out + 1] = redis.call('HGET', K.disposition, id) or ''
  end
  redis.call('DEL', K.inbox)
end
redis.call('DEL', K.lease, K.calls, K.approvals, K.pending)
redis.call('HSET', K.meta, 'run', '', 'lastActivity', A.now)
redis.call('HDEL', K.meta, 'stopBy')
touch_all(A.retention)
return out
`,
});

/**
 * createApproval → {'lost'} | {'created'} | {'exists', status}. `ttlMs` 0 keeps the record until decided. Fenced and idempotent per call: the call's
 * approval id is remembered in the thread's approvals hash, so a resumed run finds the record (and its card)
 * its predecessor created. REST: field/value pairs of the record.
 */
export const CREATE_APPROVAL = defineScript({
  name: "tlCreateApproval",
  approval: true,
  args: ["token", "callKey", "approvalId", "ttlMs", "retention"],
  rest: true,
  lua: `
if not holds(A.token) then return {'lost'} end
if redis.call('EXISTS', K.approval) == 1 then return {'exists', redis.call('HGET', K.approval, 'status')} end
for i = 1, #REST, 2 do redis.call('HSET', K.approval, REST[i], REST[i + 1]) end
redis.call('HSET', K.approval, 'status', 'pending', 'approvalId', A.approvalId, 'callKey', A.callKey)
-- ttlMs 0: a card without timeout lives until decided or settled (then for the retention, for late clicks).
if tonumber(A.ttlMs) > 0 then redis.call('PEXPIRE', K.approval, tonumber(A.ttlMs)) end
redis.call('HSET', K.approvals, A.callKey, A.approvalId)
redis.call('HSET', K.pending, A.approvalId, redis.call('HGET', K.approval, 'tool') or '')
touch_all(A.retention)
return {'created'}
`,
});

/**
 * decide → {'unknown'} | {'forbidden'} | {'expired'} | {'already', status, decidedBy} | {'accepted', status}.
 * The record lives under this thread's keys, so a click decides only a request of the thread it was made
 * in. First valid decision wins; only the requester and the approvers may decide, and only approvers may
 * allow a tool for everyone in the thread. "always" allows the tool for the requester in this thread. A
 * denial may carry a `reason` ('' = none), kept in the record for the model; an approval may carry `edited`
 * arguments (JSON, already validated by the gateway; '' = none), with which the call then runs.
 */
export const DECIDE = defineScript({
  name: "tlDecide",
  approval: true,
  args: [
    "userId",
    "user",
    "decision",
    "now",
    "channel",
    "approvalId",
    "threadId",
    "isApprover",
    "retention",
    "reason",
    "edited",
  ],
  lua: `
local now = tonumber(A.now)
if redis.call('EXISTS', K.approval) == 0 then return {'unknown'} end
local status = redis.call('HGET', K.approval, 'status')
if status ~= 'pending' then return {'already', status, redis.call('HGET', K.approval, 'decidedBy') or ''} end
local allowed = redis.call('HGET', K.approval, 'allowed') or ''
local may = A.isApprover == '1' or string.find(allowed, ',' .. A.userId .. ',', 1, true)
if A.decision == 'alwaysThread' and A.isApprover ~= '1' then may = false end
if not may then return {'forbidden'} end
local run = redis.call('HGET', K.approval, 'runId') or ''
local expires_at = tonumber(redis.call('HGET', K.approval, 'expiresAt')) or 0
if expires_at > 0 and now >= expires_at then
  redis.call('HSET', K.approval, 'status', 'expired', 'decidedAt', now)
  redis.call('HDEL', K.pending, A.approvalId)
  redis.call('PUBLISH', A.channel, cjson.encode({type = 'approval', approvalId = A.approvalId,
    threadId = A.threadId, runId = run, status = 'expired'}))
  return {'expired'}
end
local new_status = 'denied'
if A.decision == 'approve' then new_status = 'approved'
elseif A.decision == 'always' or A.decision == 'alwaysThread' then new_status = A.decision end
redis.call('HSET', K.approval, 'status', new_status, 'decidedBy', A.user, 'decidedAt', now)
if new_status == 'denied' and A.reason ~= '' then redis.call('HSET', K.approval, 'reason', A.reason) end
if new_status == 'approved' and A.edited ~= '' then redis.call('HSET', K.approval, 'editedArguments', A.edited) end
redis.call('HDEL', K.pending, A.approvalId)
if (tonumber(A.retention) or 0) > 0 and redis.call('PTTL', K.approval) < 0 then
  redis.call('PEXPIRE', K.approval, tonumber(A.retention))
end
local tool = redis.call('HGET', K.approval, 'tool')
if new_status == 'always' then
  redis.call('SADD', K.allow, 'user:' .. (redis.call('HGET', K.approval, 'requesterId') or '') .. ':' .. tool)
elseif new_status == 'alwaysThread' then
  redis.call('SADD', K.allow, 'thread:' .. tool)
end
touch_all(A.retention)
redis.call('PUBLISH', A.channel, cjson.encode({type = 'approval', approvalId = A.approvalId,
  threadId = A.threadId, runId = run, status = new_status, by = cjson.decode(A.user), at = now}))
return {'accepted', new_status}
`,
});

/** settleApproval → the final status (false when there is no record): ends a pending wait as expired/cancelled. */
export const SETTLE_APPROVAL = defineScript({
  name: "tlSettleApproval",
  approval: true,
  args: ["status", "now", "approvalId", "retention"],
  lua: `
redis.call('HDEL', K.pending, A.approvalId)
local status = redis.call('HGET', K.approval, 'status')
if not status then return false end
if status ~= 'pending' then return status end
redis.call('HSET', K.approval, 'status', A.status, 'decidedAt', A.now)
if (tonumber(A.retention) or 0) > 0 and redis.call('PTTL', K.approval) < 0 then
  redis.call('PEXPIRE', K.approval, tonumber(A.retention))
end
return A.status
`,
});

/** Every script, defined on a connection once. */
export const SCRIPTS = [
  SUBMIT,
  SET_DISPOSITION,
  WITHDRAW,
  EDIT,
  STOP,
  START,
  HEARTBEAT,
  DRAIN,
  ACK,
  APPEND,
  FINISH_CALLS,
  RECORD_CALL,
  RELEASE,
  CREATE_APPROVAL,
  DECIDE,
  SETTLE_APPROVAL,
] as const;
