export { type IpfsNode, type IpfsNodeOptions, STAND_IN_VERSION, startIpfsNode } from "./node.ts";
export {
  cidOfDigestHex,
  digestHexOf,
  KUBO_CHUNK_SIZE,
  KUBO_DEFAULTS,
  KUBO_MAX_LINKS,
  kuboCidOf,
  kuboDirectoryCidOf,
} from "./unixfs.ts";
