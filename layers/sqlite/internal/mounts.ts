/**
 * Reading the mount table (the text of `/proc/mounts`) for `SqliteProbe`.
 */

/** `\040` and the other octal escapes of the mount table. */
const unescape = (field: string) => field.replace(/\\([0-7]{3})/g, (_, code: string) => String.fromCharCode(parseInt(code, 8)))

/**
 * The mount of `folder` in the mount table `table` (the text of `/proc/mounts`):
 * its point and file system type, or undefined when no line covers it.
 */
export const mountOf = (folder: string, table: string): { readonly mountPoint: string; readonly fileSystem: string } | undefined => {
  let best: { readonly mountPoint: string; readonly fileSystem: string } | undefined
  for (const line of table.split("\n")) {
    const [, point, type] = line.split(" ")
    if (point === undefined || type === undefined) continue
    const mountPoint = unescape(point)
    const covers = mountPoint === "/" || folder === mountPoint || folder.startsWith(`${mountPoint}/`)
    // A later line over the same point hides an earlier one (mounted over it).
    if (covers && (best === undefined || mountPoint.length >= best.mountPoint.length)) best = { mountPoint, fileSystem: type }
  }
  return best
}
