/**
 * `ajv`'s `Ajv2020` whose `compile` defers the work to the validator's first
 * call. The one-file builds (`build.ts`) give it to `@platformatic/kafka` in
 * place of `ajv/dist/2020.js`, for the client's shared instance only.
 *
 * **Why**: the Kafka client compiles the JSON schemas of its options, 38 of
 * them, when it is imported (`dist/clients/{base,admin,consumer,producer}/
 * options.js`), and runs them only for a client built with `strict: true`
 * (`dist/clients/base/base.js`, `kValidateOptions`; `strict` defaults to
 * false). Sluice's archiver never sets it, so the compiling is all the work
 * the import does for nothing: ~0.3 s of CPU of the archiver's ~0.7 s start
 * from one file here (`docs/design/real-path-cost.md`, 2026-12-08). Deferred,
 * a strict client compiles each schema when it first validates with it, and
 * gets the same answer and the same `errors`.
 *
 * What changes for a strict client: a schema `ajv` refuses would throw at its
 * first validation rather than at import (the client's schemas are fixed, and
 * compile), and the code `ajv` generates is made then, so a process run with
 * `--disallow-code-generation-from-strings` fails at that validation instead
 * of at import.
 */
import { Ajv2020 as EagerAjv2020 } from "ajv/dist/2020.js"
import type { AnySchema, AnyValidateFunction, ErrorObject } from "ajv/dist/core.js"

export * from "ajv/dist/2020.js"

/** A validator that compiles its schema on its first call, then forwards to it. */
interface LazyValidator {
  (this: unknown, data: unknown, dataCxt?: unknown): unknown
  errors?: Array<ErrorObject> | null
  /** Whether the schema has been compiled (for tests). */
  readonly compiled: boolean
}

/**
 * Wraps `compile`: nothing is compiled until the returned function is first
 * called. After each call, `errors` is the compiled validator's, as ajv's own
 * validators expose it.
 */
export const lazily = (compile: () => AnyValidateFunction): LazyValidator => {
  let validate: AnyValidateFunction | undefined
  const lazy = function(this: unknown, data: unknown, dataCxt?: unknown): unknown {
    validate ??= compile()
    const result: unknown = Reflect.apply(validate, this, dataCxt === undefined ? [data] : [data, dataCxt])
    lazy.errors = validate.errors
    return result
  } as LazyValidator
  lazy.errors = null
  Object.defineProperty(lazy, "compiled", { get: () => validate !== undefined })
  return lazy
}

/** `Ajv2020`, its `compile` deferred (see the module's comment). */
export class Ajv2020 extends EagerAjv2020 {
  // @ts-expect-error -- ajv types `compile` by the schema's shape; the lazy validator answers as any compiled one does.
  override compile(schema: AnySchema, meta?: boolean): LazyValidator {
    return lazily(() => super.compile(schema, meta))
  }
}

export default Ajv2020
