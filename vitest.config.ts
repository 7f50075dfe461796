import { defineConfig } from "vitest/config"

// One vitest run over every package. Packages import each other through the
// "@sluice/source" export condition, so tests run against sources, not dist.
export default defineConfig({
  resolve: { conditions: ["@sluice/source"] },
  ssr: { resolve: { conditions: ["@sluice/source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/test/**/*.test.ts", "examples/custom-policy/test/**/*.test.ts", "examples/virtual-clock-tests/test/**/*.test.ts"],
    // Stops, at the end of the run, the on-demand services (SASL broker, S3 over
    // HTTPS) a test started (scripts/lib/LazyService.ts).
    globalSetup: ["./vitest.services.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000
  }
})
