/**
 * The auth rows of the fault report (`faults/Auth.ts`) on the real services
 * (the SASL_SSL broker and the HTTPS S3 server with a private CA, started on
 * demand): two wrong-credential runs per fault fail fast, typed, one failed
 * login each at the broker (none for the S3 CA), nothing stored or committed,
 * then a right run archives every record, audited clean from outside, and no
 * run printed a secret.
 */
import { describe, expect, it } from "vitest"
import { runAuthFaults } from "../faults/Auth.ts"

describe("faults/Auth.ts", () => {
  it("sasl-scram and tls-private-ca: injected twice each, every record found, none lost, rows ok", { timeout: 120_000 }, async () => {
    // Other test files may be using the services: the vitest run's teardown stops them.
    const rows = await runAuthFaults({ leaveServices: true })
    expect(rows.map((r) => r.name)).toEqual(["sasl-scram", "tls-private-ca"])
    for (const row of rows) {
      expect(row, row.detail).toMatchObject({ ok: true, injected: 2, records: 1000, found: 1000, lost: 0, exit: 0 })
      expect(row.recoverySeconds, row.name).not.toBeNull()
    }
  })
})
