// What the page knows, shared by every module: the last snapshots from the
// stream and what the user started here (choices, open sections, notes typed),
// which every redraw must keep.

/** The page's one state object: modules read and change it in place, and never keep a copy. */
export const state = {
  summary: null,
  tree: null,
  treePlan: null,
  treeHash: null,
  /** The plan chosen by the user, or null to follow the newest. */
  chosen: null,
  clockOffset: 0,
  lastMessage: 0,
  headSig: null,
  /** The plan whose cancel form is open, and the reason typed so far. */
  cancelFor: null,
  cancelReason: '',
  /** details elements the user opened or closed, by key. */
  open: new Map(),
  /** The "awaiting you" panel: per item key, the notes typed, what was sent, a stable DOM id. */
  notes: new Map(),
  sent: new Map(),
  said: new Map(),
  itemIds: new Map(),
  /** Collapsed finished subtrees the user opened, by node id. */
  expanded: new Set()
}

/** The node's clock as the page estimates it from the last snapshot: leases and waits are counted on it. */
export function serverNow() {
  return Date.now() + state.clockOffset
}
