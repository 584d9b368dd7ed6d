export { type ContentLimits, IpfsEnv, type IpfsSettings, ipfsSections } from "./config.ts";
export { ContentErrors } from "./errors.ts";
export { cidOfFileHash, fileHashOf } from "./file-hash.ts";
export {
  type AddSource,
  checkIpfs,
  createKuboIpfs,
  type Ipfs,
  KUBO_ADD_OPTIONS,
  SELF_CHECK,
  translateIpfsError,
} from "./kubo.ts";
export { type Release, type Releaser, releaseAndUnpin, type Unpinned } from "./release.ts";
