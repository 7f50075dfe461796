/**
 * effect's declarations name the WebCrypto types `CryptoKey` and `JsonWebKey`
 * (effect/crypto), which TypeScript declares only in the DOM lib. A Node-only
 * project (`"lib": ["es2023"]`, `"types": ["node"]`) has them from
 * `node:crypto`'s `webcrypto` instead; these two global interfaces point at
 * those, so the whole program — effect's declarations too — type-checks with
 * `skipLibCheck` off. Types only: it compiles to an empty module, and the
 * package's entry point does not import it.
 */
import type { webcrypto } from "node:crypto"

declare global {
  interface CryptoKey extends webcrypto.CryptoKey {}
  interface JsonWebKey extends webcrypto.JsonWebKey {}
}

export {}
