/** Types for `cluster-key-slot` (the package ioredis routes Cluster commands with; it ships none). */
declare module "cluster-key-slot" {
  /** The Redis Cluster hash slot (0–16383) of `key`: CRC16 of its `{hash tag}` when it has one, else of all of it. */
  function calculateSlot(key: string | Buffer): number;
  export = calculateSlot;
}
