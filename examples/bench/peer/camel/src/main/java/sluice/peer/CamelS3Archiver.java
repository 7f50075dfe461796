package sluice.peer;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.camel.AggregationStrategy;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.aws2.s3.AWS2S3Constants;
import org.apache.camel.component.kafka.KafkaConstants;
import org.apache.camel.component.kafka.consumer.DefaultKafkaManualAsyncCommitFactory;
import org.apache.camel.component.kafka.consumer.KafkaManualCommit;
import org.apache.camel.main.Main;

/**
 * bench:peer's second peer: an Apache Camel route that archives one Kafka topic to S3,
 * written as Camel's documentation shows, and stops once --records records are stored.
 *
 * <p>The route: {@code kafka:<topic>} (one consumer, offsets from the earliest, auto-commit
 * off, manual commits through {@code DefaultKafkaManualAsyncCommitFactory}, which commits
 * in the consumer's next poll: what camel-kafka's documentation gives for an aggregator
 * completing on a timeout) → {@code aggregate} by partition ({@link Lines}: one value a line)
 * completing at {@link #BATCH_RECORDS} records or {@link #BATCH_MILLIS} ms → one PUT per
 * batch with {@code aws2-s3} (path-style, the local endpoint) → the newest record's manual
 * commit. Uploads are sequential: a batch completed on size is uploaded in the consumer's
 * own thread, so reading waits for it, as the route is written.
 *
 * <p>Objects: {@code <topic>/<partition>/<first offset, 19 digits>.txt}, the topic with
 * every character outside {@code [a-zA-Z0-9 ._/]} replaced by {@code _} (the names Quix's
 * sink gives, so examples/bench/peer-archive.ts reads both), the values one a line.
 *
 * <p>Arguments {@code --brokers --topic --group --bucket --records}; the store from
 * {@code SLUICE_S3_ENDPOINT}, {@code SLUICE_S3_ACCESS_KEY}, {@code SLUICE_S3_SECRET_KEY}
 * ({@code SLUICE_S3_REGION}, default us-east-1). The last stdout line is
 * {@code RESULT {"stopAfter": N, "seconds": s, "storedAtEpochMillis": t}}: as the Quix peer's,
 * and when the last record was stored. The bench needs that time: camel-kafka records each
 * record's offset once its exchange completes, which for a record taken into the aggregator
 * is before its batch is uploaded, and commits those offsets in the consumer's next poll
 * (KafkaRecordStreamingProcessor, AsyncCommitManager), so the group's commits run ahead of
 * the uploads; the manual commit after the upload adds nothing to them.
 */
public final class CamelS3Archiver {
  /** Records per object at most: ~7.5 MB of the bench's 150 B values, as Sluice's (~6.5 MB) and Quix's (8.25 MB) objects. */
  static final int BATCH_RECORDS = 50_000;
  /** A partition's batch is completed this long after its first record at the latest (Quix's default checkpoint interval, 5 s). */
  static final long BATCH_MILLIS = 5_000;
  static final String RESULT = "RESULT ";
  static final String FIRST_OFFSET = "SluiceFirstOffset";
  static final String RECORDS = "SluiceRecords";

  private static String arg(String[] args, String name) {
    for (int i = 0; i + 1 < args.length; i++) if (args[i].equals("--" + name)) return args[i + 1];
    System.err.println("camel_s3_archiver: --" + name + " is required");
    System.exit(2);
    return null;
  }

  private static String env(String name) {
    String v = System.getenv(name);
    if (v == null || v.isBlank()) {
      System.err.println("camel_s3_archiver: " + name + " is not set (run it through npm run bench:peer)");
      System.exit(2);
    }
    return v.trim();
  }

  /** Each partition's records between completions, as one text body, one value a line. */
  static final class Lines implements AggregationStrategy {
    @Override
    public Exchange aggregate(Exchange oldExchange, Exchange newExchange) {
      String value = newExchange.getMessage().getBody(String.class);
      if (oldExchange == null) {
        StringBuilder body = new StringBuilder(value.length() * 1024);
        body.append(value).append('\n');
        newExchange.getMessage().setBody(body);
        newExchange.getMessage().setHeader(FIRST_OFFSET, newExchange.getMessage().getHeader(KafkaConstants.OFFSET));
        newExchange.getMessage().setHeader(RECORDS, 1L);
        return newExchange;
      }
      StringBuilder body = oldExchange.getMessage().getBody(StringBuilder.class);
      body.append(value).append('\n');
      // The newest record's commit handle: committing it commits the whole batch.
      oldExchange.getMessage().setHeader(KafkaConstants.MANUAL_COMMIT, newExchange.getMessage().getHeader(KafkaConstants.MANUAL_COMMIT));
      oldExchange.getMessage().setHeader(RECORDS, oldExchange.getMessage().getHeader(RECORDS, Long.class) + 1);
      return oldExchange;
    }
  }

  public static void main(String[] args) throws Exception {
    // Before any logger exists: Camel's and the Kafka client's INFO lines would fill stderr.
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    String brokers = arg(args, "brokers");
    String topic = arg(args, "topic");
    String group = arg(args, "group");
    String bucket = arg(args, "bucket");
    long records = Long.parseLong(arg(args, "records"));
    String endpoint = env("SLUICE_S3_ENDPOINT");
    String accessKey = env("SLUICE_S3_ACCESS_KEY");
    String secretKey = env("SLUICE_S3_SECRET_KEY");
    String region = System.getenv().getOrDefault("SLUICE_S3_REGION", "us-east-1");

    Main main = new Main();
    AtomicLong stored = new AtomicLong();
    long started = System.nanoTime();
    main.bind("asyncCommit", new DefaultKafkaManualAsyncCommitFactory());
    main.configure().addRoutesBuilder(new RouteBuilder() {
      @Override
      public void configure() {
        from("kafka:" + topic + "?brokers=" + brokers + "&groupId=" + group
            + "&autoOffsetReset=earliest&autoCommitEnable=false&allowManualCommit=true"
            + "&kafkaManualCommitFactory=#asyncCommit&valueDeserializer=org.apache.kafka.common.serialization.StringDeserializer")
            .routeId("archive")
            .aggregate(header(KafkaConstants.PARTITION), new Lines())
            .completionSize(BATCH_RECORDS)
            .completionTimeout(BATCH_MILLIS)
            .process(e -> {
              var m = e.getMessage();
              long first = m.getHeader(FIRST_OFFSET, Long.class);
              int partition = m.getHeader(KafkaConstants.PARTITION, Integer.class);
              byte[] body = m.getBody(StringBuilder.class).toString().getBytes(StandardCharsets.UTF_8);
              m.setBody(body);
              m.setHeader(AWS2S3Constants.KEY, topic.replaceAll("[^a-zA-Z0-9 ._/]", "_") + "/" + partition + "/" + String.format("%019d", first) + ".txt");
              m.setHeader(AWS2S3Constants.CONTENT_LENGTH, (long) body.length);
            })
            .to("aws2-s3://" + bucket + "?accessKey=RAW(" + accessKey + ")&secretKey=RAW(" + secretKey + ")&region=" + region
                + "&overrideEndpoint=true&uriEndpointOverride=" + endpoint + "&forcePathStyle=true&autoCreateBucket=false")
            .process(e -> {
              e.getMessage().getHeader(KafkaConstants.MANUAL_COMMIT, KafkaManualCommit.class).commit();
              long n = stored.addAndGet(e.getMessage().getHeader(RECORDS, Long.class));
              if (n >= records) {
                double seconds = (System.nanoTime() - started) / 1e9;
                System.out.println(RESULT + "{\"stopAfter\": " + records + ", \"seconds\": " + seconds + ", \"storedAtEpochMillis\": " + System.currentTimeMillis() + "}");
                System.out.flush();
                main.completed();
              }
            });
      }
    });
    main.run();
  }
}
