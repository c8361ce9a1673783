// One writer at a time: a sync and the periodic graceful-termination check both read the IPVS
// table and write changes computed from that read, so they must not interleave.

export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  /** Runs `work` after everything queued before it; its result (or rejection) is returned. */
  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
