package ledger

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// CID prefixes (multiformats): CID version 1, the raw multicodec (0x55), the
// sha2-256 multihash (0x12) of 32 bytes. Each is a one-byte unsigned varint.
var cidPrefix = []byte{0x01, 0x55, 0x12, sha256.Size}

// base32Lower is RFC 4648 base32 in lower case without padding, multibase's
// "b" encoding.
var base32Lower = base32.NewEncoding(strings.ToLower("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")).WithPadding(base32.NoPadding)

// CIDFromDigest returns the CIDv1 string of content whose SHA-256 is digest:
// multibase "b" + base32lower(0x01 0x55 0x12 0x20 || digest), as IPFS names a
// raw block (the multiformats CID specification).
func CIDFromDigest(digest Hash) string {
	b := append(append([]byte(nil), cidPrefix...), digest[:]...)
	return "b" + base32Lower.EncodeToString(b)
}

// CID returns the CIDv1 (raw, sha2-256, base32) of data.
func CID(data []byte) string { return CIDFromDigest(sha256.Sum256(data)) }
