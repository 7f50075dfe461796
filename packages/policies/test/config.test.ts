/**
 * Policy configs: typed by their schema's encoded form (checked by `tsc`: this
 * file is in tsconfig.test.json), data of unknown shape still accepted and
 * checked at run time, numbers finite, and sizes and durations positive where
 * 0 means nothing.
 */
import { Config, Knob, SignalBus } from "@sluice/core"
import { AdaptiveBatch, Aimd, Composition, DeliveryRate, Gradient2, Probe, SharedPressure, Throttle, Vegas } from "@sluice/policies"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Result, Schema } from "effect"

const base: Knob.KnobValues = {
  concurrency: 8,
  batchTarget: { records: 10_000, bytes: 8 << 20, maxAgeMillis: 60_000 },
  readGate: "open",
  rate: null
}

const build = <E>(policies: Layer.Layer<never, E, SignalBus.SignalBus | Knob.Knobs>) =>
  Effect.exit(
    Effect.gen(function*() {
      yield* Layer.build(policies)
      return (yield* Knob.Knobs).current()
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(SignalBus.layer, Knob.layer(base))))
  )

/** The decoded config, or the `ConfigError`'s message. */
const decode = (schema: Schema.Decoder<unknown>, input: unknown): unknown => {
  const result = Config.decodeResult("demo", schema, input)
  return Result.isSuccess(result) ? result.success : result.failure.message
}

const schemas = {
  aimd: Aimd.AimdConfig,
  batch: AdaptiveBatch.AdaptiveBatchConfig,
  deliveryrate: DeliveryRate.DeliveryRateConfig,
  gradient2: Gradient2.Gradient2Config,
  shared: SharedPressure.SharedPressureConfig,
  throttle: Throttle.ThrottleConfig,
  vegas: Vegas.VegasConfig,
  probe: Probe.ProbeConfig
} as const

describe("policy config is typed by its schema's encoded form", () => {
  it("a misspelled key or a wrong kind of value fails tsc, in every layer and in the compositions", () => {
    const typos = [
      // @ts-expect-error — "stepp" is not an AIMD config key
      () => Aimd.layer({ stepp: 1 }),
      // @ts-expect-error — "minByte" is not an AdaptiveBatch config key
      () => AdaptiveBatch.layer({ minByte: "1 MiB" }),
      // @ts-expect-error — "cieling" is not a DeliveryRate config key
      () => DeliveryRate.layer({ cieling: 128 }),
      // @ts-expect-error — "tolerence" is not a Gradient2 config key
      () => Gradient2.layer({ tolerence: 2 }),
      // @ts-expect-error — "highwater" is not a SharedPressure config key
      () => SharedPressure.layer({ highwater: 0.9 }),
      // @ts-expect-error — "bta" is not a Throttle config key
      () => Throttle.layer({ bta: 0.5 }),
      // @ts-expect-error — "alhpa" is not a Vegas config key
      () => Vegas.layer({ alhpa: 2 }),
      // @ts-expect-error — a duration is a number or text, not a boolean
      () => Throttle.layer({ restoreAfterMillis: true }),
      // @ts-expect-error — "cieling" is not a DeliveryRate config key, inside the default composition
      () => Composition.defaults({ deliveryRate: { cieling: 128 } }),
      // @ts-expect-error — "aimd" takes AIMD's config
      () => Composition.classic({ aimd: { beta: "0.5" } })
    ]
    expect(typos.every((f) => typeof f === "function")).toBe(true)
  })

  it.effect("data of unknown shape compiles and is checked when the layer is built", () =>
    Effect.gen(function*() {
      const good: unknown = JSON.parse(`{ "initial": 5, "ceiling": 64 }`)
      const built = yield* build(DeliveryRate.layer(good))
      expect(Exit.isSuccess(built) && built.value.concurrency).toBe(5)
      const typo: unknown = JSON.parse(`{ "stepp": 1 }`)
      const failed = yield* build(Aimd.layer(typo))
      expect(Exit.isFailure(failed) && String(failed.cause)).toMatch(/aimd: .*\n {2}at \["stepp"\]/s)
    }))

  it.effect("a typed config builds, with durations in short forms", () =>
    Effect.gen(function*() {
      const exit = yield* build(
        Layer.mergeAll(
          Aimd.layer({ initial: 4, probe: { intervalMillis: "2m", timeoutMillis: "500ms" } }),
          Throttle.layer({ restoreAfterMillis: "30s", retryMaxMillis: "500ms" }),
          SharedPressure.layer({ maxPauseMillis: "2s" }),
          AdaptiveBatch.layer({ restoreAfterMillis: "500ms", maxObjectBytes: "32 MiB" })
        )
      )
      expect(Exit.isSuccess(exit) && exit.value.concurrency).toBe(4)
      expect(decode(Throttle.ThrottleConfig, { restoreAfterMillis: "30s", retryMaxMillis: "500ms" })).toMatchObject({
        restoreAfterMillis: 30_000,
        retryMaxMillis: 500
      })
    }))
})

describe("policy config numbers are finite", () => {
  it("refuses NaN and ±Infinity in every numeric field kind (int, number, duration, size)", () => {
    const cases: ReadonlyArray<readonly [Schema.Decoder<unknown>, string]> = [
      [schemas.aimd, "ceiling"],
      [schemas.aimd, "beta"],
      [schemas.aimd, "referenceBytes"],
      [schemas.batch, "memoryShare"],
      [schemas.batch, "maxAgeMillis"],
      [schemas.batch, "minBytes"],
      [schemas.deliveryrate, "throttleBeta"],
      [schemas.gradient2, "queueSize"],
      [schemas.shared, "maxPauseMillis"],
      [schemas.throttle, "beta"],
      [schemas.throttle, "retryMaxMillis"],
      [schemas.vegas, "alpha"],
      [schemas.probe, "intervalMillis"]
    ]
    for (const [schema, field] of cases) {
      for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
        const message = decode(schema, { [field]: bad })
        expect(typeof message === "string" ? message : `decoded ${field}: ${bad}`).toContain(`at ["${field}"]`)
      }
    }
  })
})

describe("policy config sizes and durations are positive where 0 means nothing", () => {
  it("refuses 0 for reference sizes, batch sizes, windows and timeouts", () => {
    const zeroRefused: ReadonlyArray<readonly [Schema.Decoder<unknown>, string, string]> = [
      [schemas.aimd, "referenceBytes", "Expected at least 1 byte, got 0"],
      [schemas.vegas, "referenceBytes", "Expected at least 1 byte, got 0"],
      [schemas.gradient2, "referenceBytes", "Expected at least 1 byte, got 0"],
      [schemas.batch, "initialBytes", "Expected at least 1 byte, got 0"],
      [schemas.batch, "minBytes", "Expected at least 1 byte, got 0"],
      [schemas.batch, "maxObjectBytes", "Expected at least 1 byte, got 0"],
      [schemas.gradient2, "windowMillis", "Expected a duration greater than 0, got 0"],
      [schemas.throttle, "maxElapsedMillis", "Expected a duration greater than 0, got 0"],
      [schemas.probe, "windowMillis", "Expected a duration greater than 0, got 0"],
      [schemas.probe, "timeoutMillis", "Expected a duration greater than 0, got 0"]
    ]
    for (const [schema, field, expected] of zeroRefused) {
      expect(decode(schema, { [field]: 0 })).toBe(`demo: ${expected}\n  at ["${field}"]`)
    }
  })

  it("still accepts 0 where it has a meaning (the pipeline's age, no periodic probe, no pause, no delay)", () => {
    const zeroMeans: ReadonlyArray<readonly [Schema.Decoder<unknown>, string]> = [
      [schemas.batch, "maxAgeMillis"],
      [schemas.batch, "restoreAfterMillis"],
      [schemas.shared, "maxPauseMillis"],
      [schemas.throttle, "retryMaxMillis"],
      [schemas.throttle, "restoreAfterMillis"],
      [schemas.probe, "intervalMillis"]
    ]
    for (const [schema, field] of zeroMeans) {
      expect(decode(schema, { [field]: 0 })).toMatchObject({ [field]: 0 })
    }
  })
})
