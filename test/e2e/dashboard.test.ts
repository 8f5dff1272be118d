/**
 * The dashboard in a real browser (Debian's chromium driven by
 * playwright-core) on 127.0.0.1: instance A serves `baton/http` with the
 * dashboard; instance B — another `Baton` on its own pool over the same
 * Postgres schema — starts the executions. The page shows B's execution go
 * Running → Paused live, answers its pause through the form built from the
 * workflow's decision Schema, and sees it Finished; another tenant's
 * execution is not listed and its page is refused; a mutation without the
 * page's CSRF token is refused. The screenshot of the finished execution is
 * docs/dashboard.png.
 *
 * A real browser and real servers run on real time: the waits are bounded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Layer, Schema } from "effect"
import { HttpServer } from "effect/http"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { chromium } from "playwright-core"
import { PgStores } from "../../layers/pg/index.ts"
import { BatonHttp } from "../../src/http/index.ts"
import { Baton, Workflow } from "../../src/index.ts"
import { testSchema, url } from "../pg/db.ts"

const schema = testSchema("dashboard")
const screenshot = fileURLToPath(new URL("../../docs/dashboard.png", import.meta.url))

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })
const Decision = Schema.Struct({ approved: Schema.Boolean, note: Schema.String })

const review = Workflow.make({
  name: "review",
  version: "1",
  decision: Decision,
  graph: new StateGraph(State)
    .addNode("draft", Workflow.effectStep(() => Effect.as(Effect.sleep("4 seconds"), { log: ["draft"] })))
    .addNode("approve", Workflow.step(async () => {
      const d = interrupt({ question: "publish the draft?" }) as typeof Decision.Type
      return { log: [`approved:${d.approved}:${d.note}`] }
    }))
    .addNode("publish", Workflow.effectStep(() => Effect.as(Effect.sleep("300 millis"), { log: ["published"] })))
    .addEdge(START, "draft")
    .addEdge("draft", "approve")
    .addEdge("approve", "publish")
    .addEdge("publish", END)
})

/** A browser's caller: the tenant in a cookie (the app's own session scheme, for the test). */
const authorize: BatonHttp.Authorize = (request) => {
  const tenant = /(?:^|;\s*)tenant=([^;]+)/.exec(request.headers["cookie"] ?? "")?.[1]
  return tenant === undefined ? undefined : { tenantId: decodeURIComponent(tenant) }
}

const stores = () => PgStores.layer({ url, schema, maxConnections: 4 })

const browserArgs = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"
]

describe("the dashboard in a browser", () => {
  it.live("watches B's execution go Running → Paused, answers the pause through the form, sees it Finished; another tenant's stays hidden", () =>
    Effect.gen(function*() {
      const b = Context.get(yield* Layer.build(Baton.layer({ workflows: [review], instanceId: "instance-b", liveOutput: true }).pipe(Layer.provide(stores()))), Baton.Baton)
      const served = yield* Layer.build(
        BatonHttp.layerServer({ workflows: [review], authorize, port: 0, dashboard: true }).pipe(
          Layer.provideMerge(Baton.layer({ workflows: [review], instanceId: "instance-a", liveOutput: true })),
          Layer.provide(stores())
        )
      )
      const base = `http://127.0.0.1:${BatonHttp.port(Context.get(served, HttpServer.HttpServer))}`
      const mine = yield* b.start(review, { log: [] }, { tenantId: "acme", threadId: "acme-review-1" })
      const theirs = yield* b.start(review, { log: [] }, { tenantId: "globex", threadId: "globex-review-1" })
      const profile = mkdtempSync(join(tmpdir(), "baton-chromium-"))
      yield* Effect.acquireUseRelease(
        Effect.promise(() => chromium.launchPersistentContext(profile, { executablePath: "/usr/bin/chromium", headless: true, args: browserArgs, viewport: { width: 1280, height: 900 } })),
        (browser) =>
          Effect.promise(async () => {
            await browser.addCookies([{ name: "tenant", value: "acme", url: base }])
            const page = await browser.newPage()
            await page.goto(`${base}/dashboard#/executions`)
            await page.locator(`tr[data-thread="acme-review-1"]`).waitFor({ timeout: 60_000 })
            assert.strictEqual(await page.locator(`tr[data-thread="globex-review-1"]`).count(), 0, "another tenant's execution is not listed")
            await page.locator(`tr[data-thread="acme-review-1"]`).click()
            const status = page.locator(`[data-testid="status"]`)
            await page.locator(`[data-testid="status"]:has-text("Running")`).waitFor({ timeout: 60_000 })
            // Live: the page moves on by itself when B's pass pauses.
            await page.locator(`[data-testid="status"]:has-text("Paused")`).waitFor({ timeout: 60_000 })
            const form = page.locator(`form[data-testid="pause-form"]`)
            await form.locator(`input[name="approved"]`).check()
            await form.locator(`input[name="note"]`).fill("ship it")
            // The page keeps updating live meanwhile (the pause's own events, the view's pushes): what was typed stays.
            await page.waitForTimeout(2_000)
            assert.isTrue(await form.locator(`input[name="approved"]`).isChecked(), "the checkbox is still checked after the live updates")
            assert.strictEqual(await form.locator(`input[name="note"]`).inputValue(), "ship it", "the note is still there after the live updates")
            await form.locator(`button[type="submit"]`).click()
            // Finished, or the page's error (said in the failure, so a refused answer is not a bare timeout).
            await page.locator(`[data-testid="status"]:has-text("Finished"), [data-testid="error"]`).first().waitFor({ timeout: 60_000 })
            const shown = page.locator(`[data-testid="error"]`)
            assert.strictEqual(await shown.count(), 0, `the page shows an error: ${await shown.first().textContent().catch(() => "")}`)
            assert.strictEqual((await status.textContent())?.trim(), "Finished")
            await page.locator(`[data-testid="timeline"] tr[data-node="publish"]`).waitFor({ timeout: 60_000 })
            assert.strictEqual(await page.locator(`[data-testid="timeline"] tr[data-node="approve"]`).count(), 2, "the approve step twice: paused, then answered")
            await page.locator(`[data-testid="states"] tr[data-after="approve"] button`).click()
            assert.include(await page.locator(`[data-testid="state"]`).textContent(), "approved:true:ship it", "the state after the answered step")
            await page.screenshot({ path: screenshot, fullPage: true })
            // Without the page's token, a mutation is refused (a cross-site form or script cannot make one).
            const forged = await page.evaluate(async ([path, body]) =>
              (await fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body })).status,
              [`${base}/dashboard/api/cancel`, JSON.stringify({ tenantId: "acme", threadId: "acme-review-1" })] as const)
            assert.strictEqual(forged, 403)
            // Another tenant's execution page is refused.
            await page.goto(`${base}/dashboard#/execution/globex/${encodeURIComponent(theirs.executionId)}`)
            await page.locator(`[data-testid="error"]`).waitFor({ timeout: 60_000 })
            await page.goto(`${base}/dashboard#/execution/acme/${encodeURIComponent(theirs.executionId)}`)
            await page.locator(`[data-testid="error"]`).waitFor({ timeout: 60_000 })
            await page.close()
          }),
        (browser) => Effect.promise(() => browser.close()).pipe(Effect.ensuring(Effect.sync(() => rmSync(profile, { recursive: true, force: true }))))
      )
      const done = yield* b.status(mine.executionId, { tenantId: "acme" })
      assert.strictEqual(done.status, "Finished")
      const other = yield* b.status(theirs.executionId, { tenantId: "globex" })
      assert.include(["Running", "Paused"], other.status, "the other tenant's execution was not touched")
    }), 300_000)
})
