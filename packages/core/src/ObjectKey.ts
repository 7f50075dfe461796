/**
 * Deterministic object keys.
 *
 * A batch's key is a pure function of `(source, partition, first offset, last
 * offset)`, so replaying the same records after a crash overwrites the same object
 * instead of writing a duplicate (architecture invariant 2).
 *
 * @since 0.1.0
 */

/**
 * Renders the key of the object holding records `firstOffset..lastOffset` of a
 * partition. Offsets are zero-padded to 20 digits so keys sort by offset.
 *
 * **Example**
 *
 * ```ts
 * import { ObjectKey } from "@sluice/core"
 *
 * ObjectKey.make({ prefix: "archive", source: "orders", partition: 3, firstOffset: 0, lastOffset: 999 })
 * // "archive/orders/p=00003/00000000000000000000-00000000000000000999.rec"
 * ```
 *
 * @since 0.1.0
 */
export const make = (options: {
  readonly prefix?: string | undefined
  readonly source: string
  readonly partition: number
  readonly firstOffset: number
  readonly lastOffset: number
}): string => {
  const prefix = options.prefix === undefined || options.prefix === "" ? "" : `${options.prefix.replace(/\/+$/, "")}/`
  const p = String(options.partition).padStart(5, "0")
  const first = String(options.firstOffset).padStart(20, "0")
  const last = String(options.lastOffset).padStart(20, "0")
  return `${prefix}${encodeSegment(options.source)}/p=${p}/${first}-${last}.rec`
}

/**
 * The manifest's key: the object key with `.manifest.json` in place of `.rec`.
 *
 * @since 0.1.0
 */
export const manifestKey = (objectKey: string): string => objectKey.replace(/\.rec$/, "") + ".manifest.json"

const encodeSegment = (s: string): string => s.replace(/[^A-Za-z0-9._=-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
