/**
 * The part of Bun's `bun:ffi` module the host lock uses (bun.sh/docs/api/ffi), declared here
 * rather than pulling in bun-types, whose globals would clash with @types/node's.
 */
declare module 'bun:ffi' {
  export const FFIType: {
    readonly i32: number;
    readonly i64: number;
    readonly u64: number;
    readonly ptr: number;
    readonly cstring: number;
  };
  export type Pointer = number & { readonly __pointer: unique symbol };
  interface Signature {
    readonly args: readonly number[];
    readonly returns: number;
  }
  export function dlopen<S extends Record<string, Signature>>(
    path: string,
    symbols: S,
  ): {
    readonly symbols: {
      readonly [K in keyof S]: (...args: (number | bigint | Pointer | null)[]) => number & (Pointer | null);
    };
  };
  export const read: {
    i32(ptr: Pointer, byteOffset?: number): number;
    ptr(ptr: Pointer, byteOffset?: number): number;
  };
  /** The address of a typed array's memory (valid while the array is alive and not moved). */
  export function ptr(view: ArrayBufferView): Pointer;
}
