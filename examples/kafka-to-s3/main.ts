/**
 * The Kafka → S3 archiver as an operator runs it: a Kafka topic into an S3
 * bucket with the default policies, metrics on a Prometheus endpoint, a
 * graceful drain on SIGTERM / SIGINT. See README.md beside this file.
 *
 * ```sh
 * set -a; . .services/kafka.env; . .services/s3.env; set +a   # SLUICE_KAFKA_BROKERS, SLUICE_S3_*
 * node --conditions=@sluice/source examples/kafka-to-s3/main.ts <topic> <bucket> \
 *   [--config examples/kafka-to-s3/archiver.json] [--prometheus-port 9464] [--prometheus-host 127.0.0.1] \
 *   [--name <pipeline>] [--group <consumer group>] [--instance-id <id>] [--until-committed N] [--max-seconds S] \
 *   [--drain-seconds 30] [--progress-seconds 5] [--linger-seconds 0] [--print-metrics] \
 *   [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]
 * ```
 *
 * Exit codes: 0 drained cleanly, 1 the run failed (or the drain timed out),
 * 2 bad usage or settings. The last stdout line is one JSON object:
 * `{ reason, recordsRead, recordsVerified, recordsCommitted, recordsLeftOnRevoke, batchesVerified, metrics }`.
 *
 * This file only turns on Node's module compile cache and then loads the
 * command (Command.ts). A restart spends most of its time loading modules
 * (measured here on 2 cores under load: `--help` in 1.0–1.3 s with the cache,
 * 1.5–2.3 s without), and a restart's time is the time its partitions wait.
 * The cache lives in NODE_COMPILE_CACHE (default: the OS temp directory);
 * NODE_DISABLE_COMPILE_CACHE=1 turns it off.
 */
import { enableCompileCache } from "node:module"

enableCompileCache()
await import("./Command.ts")
