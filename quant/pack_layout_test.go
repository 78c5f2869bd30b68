package quant

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/bankml/bankml/gguf"
)

// TestPackedBlocksHoldTheirScales: a packed Q2_0 or TQ2_0 group is its
// blocks one after the other, each its code section then the sixteen rows'
// f16 d (packBlockBytes), TQ2_0's padded with zeros to a whole cache line so
// that every block starts on one (pack.go; the tiles step Q2BLOCK and
// TQ2BLOCK bytes a block). The d of row r, block b is the plain row's d.
func TestPackedBlocksHoldTheirScales(t *testing.T) {
	tests := []struct {
		name      string
		typ       gguf.GGMLType
		rows, dAt int // dAt: the d's offset in a plain block
		lineAlign bool
	}{
		{"Q2_0 blocks of 288 bytes hold their rows' d after the codes", gguf.Q2_0, 37, 0, false},
		{"TQ2_0 blocks of 1088 bytes start on a cache line and pad the d with zeros", gguf.TQ2_0, 21, 64, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 6))
			m := randRepacked(t, r, tc.typ, tc.rows, 4*tc.typ.BlockSize())
			p := m.packedRows()
			cb, bb := packCodeBytes(tc.typ), packBlockBytes(tc.typ)
			if p.groupSize != p.nb*bb {
				t.Fatalf("group of %d bytes, want %d blocks of %d", p.groupSize, p.nb, bb)
			}
			bs := tc.typ.TypeSize()
			for g := range p.groups {
				grp := p.group(g)
				for b := range p.nb {
					code, sc := p.block(g, b)
					if &code[0] != &grp[bb*b] || &sc[0] != &grp[bb*b+cb] || len(sc) != 2*packRows {
						t.Fatalf("group %d block %d: sections not at the block's bytes %d and %d", g, b, bb*b, bb*b+cb)
					}
					if tc.lineAlign && uintptr(unsafe.Pointer(&code[0]))%64 != 0 {
						t.Fatalf("group %d block %d starts at %#x, not on a cache line", g, b, uintptr(unsafe.Pointer(&code[0])))
					}
					if pad := grp[bb*b+cb+2*packRows : bb*(b+1)]; !bytes.Equal(pad, make([]byte, len(pad))) {
						t.Fatalf("group %d block %d: padding %x, want zeros", g, b, pad)
					}
					for row := range packRows {
						want := uint16(0)
						if i := g*packRows + row; i < tc.rows {
							want = binary.LittleEndian.Uint16(m.Data[(i*p.nb+b)*bs+tc.dAt:])
						}
						if got := binary.LittleEndian.Uint16(sc[2*row:]); got != want {
							t.Fatalf("group %d block %d row %d: d %#04x, want %#04x", g, b, row, got, want)
						}
					}
				}
			}
		})
	}
}
