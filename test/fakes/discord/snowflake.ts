/** Discord's epoch (2015-01-01), the origin of snowflake timestamps. */
export const DISCORD_EPOCH = 1_420_070_400_000n;

/**
 * Makes realistic snowflakes (17–19 digits, increasing, with a timestamp): @discordjs/rest recognizes
 * channel ids in routes only by that shape, and per-channel rate-limit buckets depend on it.
 */
export class SnowflakeGenerator {
  private lastMs = 0n;
  private increment = 0n;

  /** A new id, later than every id made before. */
  next(): string {
    return this.make(BigInt(Date.now()));
  }

  /** A new id whose shard is `shard` of `count` (`(id >> 22) % count`, Discord's guild → shard rule). */
  nextForShard(shard: number, count: number): string {
    let ms = BigInt(Date.now());
    if (ms < this.lastMs) ms = this.lastMs;
    while (Number((ms - DISCORD_EPOCH) % BigInt(count)) !== shard) ms++;
    return this.make(ms);
  }

  private make(now: bigint): string {
    let ms = now < this.lastMs ? this.lastMs : now;
    if (ms === this.lastMs) {
      this.increment++;
      if (this.increment >= 4096n) {
        ms++;
        this.increment = 0n;
      }
    } else {
      this.increment = 0n;
    }
    this.lastMs = ms;
    return (((ms - DISCORD_EPOCH) << 22n) | (1n << 17n) | (1n << 12n) | this.increment).toString();
  }
}

/** The shard that receives a guild's events. */
export function shardOf(guildId: string, count: number): number {
  return Number((BigInt(guildId) >> 22n) % BigInt(count));
}

/** The creation time (ms) of a snowflake. */
export function snowflakeTime(id: string): number {
  return Number((BigInt(id) >> 22n) + DISCORD_EPOCH);
}
