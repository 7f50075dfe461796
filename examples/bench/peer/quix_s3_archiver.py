"""bench:peer — the peer archiver: a Quix Streams application that archives one Kafka
topic to S3 with Quix's own community sink, `S3FileSink`, and stops once it has
processed the topic's `--records` records and committed them.

Run by examples/bench/peer.ts in the virtualenv scripts/lib/peer-venv.sh installs
(quixstreams[s3]==3.28.1); see examples/bench/peer/README.md. By hand, on a topic
and a bucket that exist:

    SLUICE_S3_ENDPOINT=... SLUICE_S3_ACCESS_KEY=... SLUICE_S3_SECRET_KEY=... \
      ~/.cache/sluice/venv-quixstreams-3.28.1/bin/python quix_s3_archiver.py \
      --brokers 127.0.0.1:9092 --topic t --group g --bucket b --records 200000

What it runs is Quix's documented pattern, nothing more: `Application` (consumer
group, subscribe, at-least-once) → `app.dataframe(topic)` → `sdf.sink(S3FileSink(...))`.
The sink gathers each partition's records between checkpoints into one batch and,
at each checkpoint, writes every batch as one object
`<topic>/<partition>/<first offset, 19 digits>.jsonl` (JSON lines
`{"_timestamp", "_key", "_value"}`), one PUT at a time, then commits the offsets.

How it stops: `app.run(count=N)`, Quix's own stop condition — after N outputs
the poll loop ends and the last checkpoint is committed (`commit_checkpoint(force=True)`
in `Application._run_dataframe`), which flushes the sink and commits the offsets;
then the consumer closes. The bench checks the group's committed offsets from outside.

Values are read as text (`value_deserializer="str"`): the bench's records are not
JSON (Quix's default deserializer), and the JSON lines format cannot hold bytes.

On SIGTERM (or Ctrl-C) Quix's handler stops the loop the same way: the last
checkpoint is committed and the process exits 0 (checked by hand with 3.28.1).

The last stdout line is `RESULT {"stopAfter": N, "seconds": s}` (seconds from the
start of `app.run` to its return).
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from quixstreams import Application
from quixstreams.sinks.community.file.s3 import S3FileSink

# The tuning measured before for this sink on the local S3 server: a checkpoint (one
# object per partition, then one commit) every 250 000 records, or at the latest every
# 60 s. Quix's defaults (`--defaults`) checkpoint every 5 s whatever the count, which
# at this rate means many small objects.
TUNED_COMMIT_EVERY = 250_000
TUNED_COMMIT_INTERVAL_SECONDS = 60.0

RESULT = "RESULT "


def env(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if value == "":
        sys.exit(f"quix_s3_archiver: {name} is not set (run it through npm run bench:peer)")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--records", type=int, required=True, help="stop after this many records")
    parser.add_argument("--defaults", action="store_true", help="Quix's default commit settings, not the tuned ones")
    args = parser.parse_args()

    # A stateless app opens no store, but Quix still wants a state directory: a fresh
    # one per run, so nothing is shared between runs or left in the working directory.
    state_dir = tempfile.mkdtemp(prefix="quix-state-")
    commit = {} if args.defaults else {
        "commit_every": TUNED_COMMIT_EVERY,
        "commit_interval": TUNED_COMMIT_INTERVAL_SECONDS,
    }
    app = Application(
        broker_address=args.brokers,
        consumer_group=args.group,
        auto_offset_reset="earliest",
        state_dir=state_dir,
        loglevel="WARNING",
        **commit,
    )
    topic = app.topic(args.topic, value_deserializer="str")
    sink = S3FileSink(
        bucket=args.bucket,
        aws_access_key_id=env("SLUICE_S3_ACCESS_KEY"),
        aws_secret_access_key=env("SLUICE_S3_SECRET_KEY"),
        region_name=os.environ.get("SLUICE_S3_REGION", "us-east-1"),
        endpoint_url=env("SLUICE_S3_ENDPOINT"),
    )
    app.dataframe(topic).sink(sink)

    started = time.monotonic()
    try:
        # collect=False: count the outputs without keeping them (they would be N dicts in memory).
        app.run(count=args.records, collect=False)
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    seconds = time.monotonic() - started
    # Quix does not say how many records it processed (a SIGTERM also ends `run`): the
    # bench counts them in the archive.
    print(RESULT + json.dumps({"stopAfter": args.records, "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
