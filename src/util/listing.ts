// A list that does not hold its elements: each is made when the list is read, and is garbage
// once read. For what a report lists by the million (the virtual servers of a dry run): made
// whole, the list would cost more than what it describes.

export class Listing<T> implements Iterable<T> {
  constructor(
    /** How many elements a read yields. */
    readonly length: number,
    /** Makes the elements, in order, each time the list is read. */
    private readonly make: () => Iterator<T>,
  ) {}

  [Symbol.iterator](): Iterator<T> {
    return this.make();
  }

  /** As JSON, the array it lists (made whole: for small lists and tests). */
  toJSON(): T[] {
    return [...this];
  }
}

/** Lists one after another, as one. */
export function concatListings<T>(parts: readonly Listing<T>[]): Listing<T> {
  const length = parts.reduce((n, p) => n + p.length, 0);
  return new Listing(length, function* () {
    for (const part of parts) yield* part;
  });
}
