// TimeSlice: a busy loop that pauses when its slice is due lets an HTTP server in the same
// process answer. Asserted on outcomes (every request answered while the loop still runs), not
// on how long anything took.

import { describe, expect, test } from "bun:test";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { runSteps, runStepsPaced, type Steps, TimeSlice } from "../../src/util/time-slice.ts";

describe("TimeSlice", () => {
  test("a loop that pauses when due lets the server answer before the loop ends", async () => {
    const server = createServer((_req, res) => res.end("ok"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    let loopDone = false;
    let answeredDuringLoop = 0;
    const requests = (async () => {
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`http://127.0.0.1:${port}/`);
        if ((await r.text()) === "ok" && !loopDone) answeredDuringLoop++;
      }
    })();
    // Busy until the requests are answered, or ~1 million rounds of work (a second or two): a
    // pause that let no I/O in would end the loop first, with nothing answered.
    const slice = new TimeSlice(5);
    let done = false;
    void requests.then(() => {
      done = true;
    });
    for (let i = 0; i < 1_000_000 && !done; i++) {
      let x = 0;
      for (let j = 0; j < 1000; j++) x += Math.sqrt(j);
      if (x < 0) break;
      if (slice.due) await slice.pause();
    }
    loopDone = true;
    await requests;
    server.close();
    expect(answeredDuringLoop).toBe(3);
  });

  test("due once the budget is used", () => {
    expect(new TimeSlice(1_000_000).due).toBe(false);
    expect(new TimeSlice(0).due).toBe(true);
  });

  test("steps run to the same result at once and paced; paced, a used-up slice lets queued callbacks in", async () => {
    function* countTo(n: number, seen: number[]): Steps<number> {
      let sum = 0;
      for (let i = 1; i <= n; i++) {
        seen.push(i);
        sum += i;
        yield;
      }
      return sum;
    }
    const atOnce: number[] = [];
    expect(runSteps(countTo(10, atOnce))).toBe(55);
    // Budget 0: due at every step, so each step is followed by one turn of the event loop.
    const paced: number[] = [];
    let turns = 0;
    const tick = () => {
      turns++;
      if (turns < 100) setImmediate(tick);
    };
    setImmediate(tick);
    expect(await runStepsPaced(countTo(10, paced), new TimeSlice(0))).toBe(55);
    expect(paced).toEqual(atOnce);
    expect(turns).toBeGreaterThanOrEqual(10);
    // A slice never used up pauses nowhere: nothing else runs before the steps end.
    const before = turns;
    expect(await runStepsPaced(countTo(10, []), new TimeSlice(1_000_000))).toBe(55);
    expect(turns).toBe(before);
  });
});
