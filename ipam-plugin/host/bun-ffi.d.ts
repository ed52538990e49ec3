/**
 * The part of Bun's `bun:ffi` module the host lock uses (bun.sh/docs/api/ffi), declared here
 * rather than pulling in bun-types, whose globals would clash with @types/node's.
 */
declare module 'bun:ffi' {
  export const FFIType: { readonly i32: number; readonly ptr: number };
  export type Pointer = number & { readonly __pointer: unique symbol };
  interface Signature {
    readonly args: readonly number[];
    readonly returns: number;
  }
  export function dlopen<S extends Record<string, Signature>>(
    path: string,
    symbols: S,
  ): { readonly symbols: { readonly [K in keyof S]: (...args: number[]) => number & (Pointer | null) } };
  export const read: { i32(ptr: Pointer, byteOffset?: number): number };
}
