const EOCD_SIGNATURE = 0x06054b50; // PK\5\6
const ZIP64_LOCATOR_SIGNATURE = 0x07064b50; // PK\6\7
const EOCD_SIZE = 22;
const MAX_COMMENT = 0xffff;

/**
 * Whether `data` ends like a zip archive: a well-formed end-of-central-directory record. Cheap
 * (no unzipping): a zip is read from that record, so any file lacking one is refused, while a
 * damaged member inside an otherwise well-formed archive is left for the build to find.
 */
export function isZipArchive(data: Buffer): boolean {
  const lowest = Math.max(0, data.length - EOCD_SIZE - MAX_COMMENT);
  // From the end back: the record sits right before its comment, which may be up to 64 KiB.
  for (let at = data.length - EOCD_SIZE; at >= lowest; at--) {
    if (data.readUInt32LE(at) !== EOCD_SIGNATURE) continue;
    // The comment must end exactly at the end of the file (a stray PK\5\6 seldom does).
    if (at + EOCD_SIZE + data.readUInt16LE(at + 20) !== data.length) continue;
    const size = data.readUInt32LE(at + 12);
    const offset = data.readUInt32LE(at + 16);
    // 0xFFFFFFFF: the real values are in the ZIP64 record, whose locator precedes this one.
    const zip64 = size === 0xffffffff || offset === 0xffffffff;
    // The central directory it points at must lie before it.
    if (zip64 ? at >= 20 && data.readUInt32LE(at - 20) === ZIP64_LOCATOR_SIGNATURE : offset + size <= at) return true;
  }
  return false;
}
