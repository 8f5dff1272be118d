import { defaultClientConditions, defaultServerConditions } from "vite"
import { defineConfig } from "vitest/config"

export default defineConfig({
  // "baton" (the package's own name, as the examples import it) resolves to the
  // sources through the `baton-source` exports condition.
  resolve: { conditions: ["baton-source", ...defaultClientConditions] },
  ssr: { resolve: { conditions: ["baton-source", ...defaultServerConditions] } },
  test: {
    include: ["test/**/*.test.ts"],
    globals: true,
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
