/**
 * The archiver's metrics endpoint: an OpenTelemetry `MeterProvider` whose only
 * reader is `@opentelemetry/exporter-prometheus`, served over HTTP on a local
 * address (`http://127.0.0.1:9464/metrics` by default).
 *
 * Pass `meterProvider` to the pipeline (`Pipeline.start({ meterProvider })`):
 * that provider is the one the exporter reads. The exporter pins its own copy
 * of `@opentelemetry/sdk-metrics` (3.1.0, nested under it) beside the
 * workspace's (3.1.x); the provider made here comes from the workspace's copy
 * and the exporter reads it through the `MetricReader` contract
 * (`setMetricProducer` / `collect`), which is what `KafkaToS3Prometheus.test.ts`
 * checks by scraping the pipeline's own series. Nothing is registered globally.
 *
 * The exporter's own server would listen on a fixed port; here the exporter
 * only serializes (`preventServerStart`) and a plain `node:http` server bound
 * to `host` serves it, so port 0 (any free port) works and the URL printed is
 * the one bound.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import { MeterProvider } from "@opentelemetry/sdk-metrics"
import { Data, Effect } from "effect"
import type { Scope } from "effect"

/** Where to serve the metrics. */
export interface Options {
  /** Address to bind (default `127.0.0.1`: the endpoint is not reachable from other hosts). */
  readonly host?: string | undefined
  /** Port (default 9464, Prometheus' registered port for OpenTelemetry; 0 = any free port). */
  readonly port?: number | undefined
}

/** A running endpoint. */
export interface Endpoint {
  /** Give this to the pipeline: the exporter reads it. */
  readonly meterProvider: MeterProvider
  /** The scrape URL, e.g. `http://127.0.0.1:9464/metrics`. */
  readonly url: string
}

/** The endpoint could not listen (the port is taken, the address is not local, …). */
export class ListenFailed extends Data.TaggedError("ListenFailed")<{ readonly address: string; readonly message: string }> {}

/** Default port: 9464, registered for the OpenTelemetry Prometheus exporter. */
export const DEFAULT_PORT = 9464

/**
 * Starts the endpoint in the current scope; closing the scope stops the
 * server and shuts the meter provider (and its exporter) down.
 */
export const make = (options: Options = {}): Effect.Effect<Endpoint, ListenFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const host = options.host ?? "127.0.0.1"
    const port = options.port ?? DEFAULT_PORT
    const exporter = new PrometheusExporter({ host, port, preventServerStart: true })
    const meterProvider = yield* Effect.acquireRelease(
      Effect.sync(() => new MeterProvider({ readers: [exporter] })),
      (provider) => Effect.promise(() => provider.shutdown().catch(() => undefined))
    )
    const server = yield* Effect.acquireRelease(
      Effect.callback<Http.Server, ListenFailed>((resume) => {
        const server = Http.createServer((request, response) => {
          if (request.method === "GET" && (request.url ?? "").split("?")[0] === "/metrics") {
            exporter.getMetricsRequestHandler(request, response)
          } else {
            response.statusCode = 404
            response.end("not found: scrape /metrics\n")
          }
        })
        server.once("error", (error) => resume(Effect.fail(new ListenFailed({ address: `${host}:${port}`, message: error.message }))))
        server.listen({ host, port }, () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections() // keep-alive scrapers would hold close() open
        })
    )
    const bound = server.address() as AddressInfo
    const shownHost = bound.family === "IPv6" ? `[${bound.address}]` : bound.address
    return { meterProvider, url: `http://${shownHost}:${bound.port}/metrics` }
  })

/** Fetches the endpoint once: the exposition text. */
export const scrape = (url: string): Effect.Effect<string, Error> =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetch(url)
      if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`)
      return await response.text()
    },
    catch: (cause) => (cause instanceof Error ? cause : new Error(String(cause)))
  })
