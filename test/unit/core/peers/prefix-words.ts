/**
 * Prompts for the peer policies' tests as chained block hashes: one character is one block, so
 * a prompt's words are those of its text and the peers' character examples carry over block for
 * block. Entry i hashes the prefix of i + 1 characters (FNV-1a 64), as the core's tracking hashes
 * name a prefix of i + 1 blocks.
 */
export function charBlocks(text: string): Uint32Array {
  const w = new Uint32Array(2 * text.length);
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    h = BigInt.asUintN(64, (h ^ BigInt(text.charCodeAt(i))) * 0x100000001b3n);
    w[2 * i] = Number(h & 0xffffffffn);
    w[2 * i + 1] = Number(h >> 32n);
  }
  return w;
}
