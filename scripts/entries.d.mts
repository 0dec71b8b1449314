/** The entries that are not an adapter, by their name in dist/ (`.` is `index`), and their source. */
export declare const CORE_ENTRIES: Readonly<Record<string, string>>;
/** The adapters' names, in the order of package.json `exports`: `./express` is `express`. */
export declare const ADAPTERS: readonly string[];
/** The source of an entry, by its name in dist/: a core entry's own, else `src/adapters/<name>.ts`. */
export declare function sourceOf(name: string): string;
