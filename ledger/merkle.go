package ledger

import (
	"crypto/sha256"
	"errors"
	"fmt"
)

// Hash is a SHA-256 digest: a leaf hash, a node hash or a tree root.
type Hash [sha256.Size]byte

// LeafHash is RFC 6962's leaf hash (§2.1): SHA-256(0x00 || data).
func LeafHash(data []byte) Hash {
	h := sha256.New()
	h.Write([]byte{0x00})
	h.Write(data)
	var out Hash
	h.Sum(out[:0])
	return out
}

// NodeHash is RFC 6962's interior node hash (§2.1):
// SHA-256(0x01 || left || right).
func NodeHash(left, right Hash) Hash {
	var buf [1 + 2*sha256.Size]byte
	buf[0] = 0x01
	copy(buf[1:], left[:])
	copy(buf[1+sha256.Size:], right[:])
	return sha256.Sum256(buf[:])
}

// EmptyRoot is the root of the empty tree, SHA-256 of the empty string
// (RFC 6962 §2.1: MTH({}) = SHA-256()).
func EmptyRoot() Hash { return sha256.Sum256(nil) }

// split returns the largest power of two smaller than n (n >= 2): RFC 6962's
// k with k < n <= 2k.
func split(n uint64) uint64 {
	k := uint64(1)
	for k<<1 < n {
		k <<= 1
	}
	return k
}

// Root returns the Merkle tree hash MTH(D[n]) of RFC 6962 §2.1 over the leaf
// hashes: EmptyRoot for none, the leaf hash for one, and
// NodeHash(MTH(D[0:k]), MTH(D[k:n])) with k the largest power of two smaller
// than n otherwise.
func Root(leaves []Hash) Hash {
	switch len(leaves) {
	case 0:
		return EmptyRoot()
	case 1:
		return leaves[0]
	}
	k := split(uint64(len(leaves)))
	return NodeHash(Root(leaves[:k]), Root(leaves[k:]))
}

// InclusionPath returns the audit path PATH(m, D[n]) of RFC 6962 §2.1.1 for
// leaf index m in the tree of the given leaf hashes: the sibling subtree
// hashes from the leaf up to the root. The error reports an index outside
// the tree.
func InclusionPath(leaves []Hash, m uint64) ([]Hash, error) {
	if m >= uint64(len(leaves)) {
		return nil, fmt.Errorf("ledger: leaf index %d outside a tree of %d entries", m, len(leaves))
	}
	return path(leaves, m), nil
}

func path(d []Hash, m uint64) []Hash {
	n := uint64(len(d))
	if n <= 1 {
		return nil
	}
	k := split(n)
	if m < k {
		return append(path(d[:k], m), Root(d[k:]))
	}
	return append(path(d[k:], m-k), Root(d[:k]))
}

// ErrProof is wrapped by every proof that does not verify: an inclusion or consistency proof, a
// checkpoint whose signature or cosignatures do not.
var ErrProof = errors.New("ledger: proof does not verify")

// VerifyInclusion checks an inclusion proof exactly as RFC 9162 §2.1.3.2
// prescribes: leaf hash, leaf index, tree size, inclusion path and root hash
// must fit together. The error wraps ErrProof and says which check failed.
func VerifyInclusion(leaf Hash, index, size uint64, inclusionPath []Hash, root Hash) error {
	// 1. The leaf index must be inside the tree.
	if index >= size {
		return fmt.Errorf("%w: leaf index %d is not below tree size %d", ErrProof, index, size)
	}
	// 2. fn is the leaf index, sn the last index.
	fn, sn := index, size-1
	// 3. r starts at the leaf hash.
	r := leaf
	// 4. Fold in the path.
	for _, p := range inclusionPath {
		if sn == 0 { // a. more path than tree
			return fmt.Errorf("%w: path has %d hashes, more than a tree of %d entries needs", ErrProof, len(inclusionPath), size)
		}
		if fn&1 == 1 || fn == sn { // b.
			r = NodeHash(p, r)
			if fn&1 == 0 {
				for fn&1 == 0 && fn != 0 {
					fn >>= 1
					sn >>= 1
				}
			}
		} else {
			r = NodeHash(r, p)
		}
		fn >>= 1 // c.
		sn >>= 1
	}
	// 5. The path must have been used up exactly and give the root.
	if sn != 0 {
		return fmt.Errorf("%w: path of %d hashes is too short for a tree of %d entries", ErrProof, len(inclusionPath), size)
	}
	if r != root {
		return fmt.Errorf("%w: the path gives root %x, not %x", ErrProof, r[:], root[:])
	}
	return nil
}

// frontier holds the roots of the perfect subtrees that a tree of the leaves
// appended so far decomposes into (largest first), so that appending and
// computing the root cost O(log n) hashes.
type frontier struct {
	nodes  []Hash
	height []int
}

func (f *frontier) push(leaf Hash) {
	f.nodes = append(f.nodes, leaf)
	f.height = append(f.height, 0)
	for n := len(f.nodes); n >= 2 && f.height[n-1] == f.height[n-2]; n = len(f.nodes) {
		merged := NodeHash(f.nodes[n-2], f.nodes[n-1])
		f.nodes = append(f.nodes[:n-2], merged)
		f.height = append(f.height[:n-2], f.height[n-2]+1)
	}
}

// root folds the perfect subtrees from the right: RFC 6962's split puts the
// largest one on the left at every level.
func (f *frontier) root() Hash {
	if len(f.nodes) == 0 {
		return EmptyRoot()
	}
	r := f.nodes[len(f.nodes)-1]
	for i := len(f.nodes) - 2; i >= 0; i-- {
		r = NodeHash(f.nodes[i], r)
	}
	return r
}
