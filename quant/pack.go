package quant

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/bankml/bankml/gguf"
)

// Packed weights: Q1_0, Q2_0 and TQ2_0 rows re-laid out, sixteen rows at a
// time, so that one vector lane holds one row (lanes = rows) and every
// activation operand is one dword broadcast to all sixteen lanes. The
// arithmetic is unchanged: each row's float chain is the reference's
// (ggml_vec_dot_q1_0_q8_0 / _q2_0_q8_0 / _tq2_0_q8_K of the haswell
// variant), only the integer sums are formed in another order.
//
// A packed matrix is a copy (the model file stays mapped read-only); it has
// the size of the rows it packs, rounded up to whole groups of sixteen rows,
// TQ2_0's 3 % more for its padding (Matrix.Repack reports the bytes). Group g holds rows 16g..16g+15 (rows past
// Rows are zero: their outputs are dropped); its nb blocks are stored as
// code sections of packCodeBytes(typ) bytes and scale sections of 32 bytes
// (the sixteen rows' f16 d, row r at 2r). Q2_0 and TQ2_0 groups are
// contiguous, block by block: each block's code section, then its scale
// section (packBlockBytes; TQ2_0's padded to a cache line), so that a group is one stream in the order the
// tiles read it (code and scale sections apart were two streams: a single
// thread reading a 302 MB Q2_0 matrix at one column took 18.2-18.7 ns a
// block that way against 12.0-12.2 interleaved; docs/PERFORMANCE.md,
// "one stream per group"). Q1_0 is stored in
// the order the lookup-table walk reads it (tileQ1_0LUTGroups), so that a
// worker's share (runShares) is one sequential stream: bands of q1Band groups, each
// band chunk by chunk (q1Chunk blocks), each chunk group by group, a
// segment per (group, chunk) of its n code sections then its n scale
// sections (q1Seg). The code sections:
//
//   - Q2_0 (block of 64): four vectors v = 2s+g (s = Q8_0 sub-block, g = 0,
//     1) of 64 bytes; row r's dword at 4r holds in byte j the four codes of
//     weights 32s+16g+4n+j (n = 0..3) at bits 2n, so code plane n of a
//     vector meets the four consecutive activations 32s+16g+4n ... +3.
//   - Q1_0 (block of 128): four vectors v = k (k = Q8_0 sub-block) of 64
//     bytes; row r's dword at 4r is its qs[4k..4k+3] as they are (bit i =
//     sign bit of weight 32k+i), so nibble j of a lane (bits 4j..4j+3) is
//     the weight bits of the kernel's lane j for that row: it is the
//     vpermps index into the activation's lookup table (the lookup-table
//     tiles read it as the low nibble of the words loaded j/2 bytes
//     further, shifted right by 4 for odd j).
//     Packing it is a copy of four dwords per row and block.
//   - TQ2_0 (block of 256): sixteen vectors v = 8h+l (h = half, l = the
//     kernel's lane 0..7) of 64 bytes; row r's dword at 4r is qs[32h+4l..+3]
//     of that row, whose code plane n meets the activations
//     128h+32n+4l ... +3.

// packRows is the number of rows in a packed group (the lanes of a zmm).
const packRows = 16

// packCodeBytes is the size of one block's code section in a packed group.
func packCodeBytes(typ gguf.GGMLType) int {
	switch typ {
	case gguf.Q1_0, gguf.Q2_0:
		return 256
	case gguf.TQ2_0:
		return 1024
	}
	return 0
}

// packBlockBytes is the size of one packed Q2_0 or TQ2_0 block: its code
// section and its 32 scale bytes, stored together (Q2BLOCK and TQ2BLOCK in
// tile_amd64.h). A TQ2_0 block's scale section is padded with 32 zero bytes
// to a whole cache line, so that every block and its sixteen 64-byte code
// vectors start on one (3 % more bytes; unpadded, half the blocks' code
// loads straddled two lines and one stream decoded 4 % slower than before
// the blocks held their scales, padded 5 % faster: docs/PERFORMANCE.md). A
// Q2_0 block is not padded: 11 % more bytes cost more than its straddling
// loads.
func packBlockBytes(typ gguf.GGMLType) int {
	switch typ {
	case gguf.Q2_0:
		return q2BlockBytes
	case gguf.TQ2_0:
		return tq2BlockBytes
	}
	return 0
}

const (
	q2BlockBytes  = 256 + 2*packRows
	tq2BlockBytes = 1024 + 64
)

// packed is a packed copy of a Matrix (see above).
type packed struct {
	typ       gguf.GGMLType
	rows, nb  int // rows of the matrix, blocks per row
	groups    int
	groupSize int    // bytes per group
	data      []byte // groups*groupSize bytes, 64-byte aligned
}

// Packable reports whether Repack can pack this type.
func Packable(typ gguf.GGMLType) bool { return packCodeBytes(typ) > 0 }

// Repack makes a packed copy of the rows of m for the SIMD kernels
// (LevelAVX2, LevelAVX512), which MatMul then reads instead of m.Data; the
// generic level keeps reading m.Data. It returns the bytes allocated (the
// rows' size rounded up to whole groups of 16 rows, plus alignment). Types
// other than Q1_0, Q2_0 and TQ2_0 are left as they are (0 bytes, no error).
// m.Data is only read, once: later changes to it are not seen by the SIMD
// levels (repack again). Copies of the Matrix value share the packed rows.
// Errors: the checks of Supported.
func (m *Matrix) Repack() (int, error) {
	if err := m.Supported(); err != nil {
		return 0, err
	}
	if !Packable(m.Type) {
		return 0, nil
	}
	if m.pk == nil {
		m.pk = new(packSlot)
	}
	pk := packMatrix(m.Type, m.Data, m.Rows, m.Cols/m.Type.BlockSize())
	m.pk.p.Store(pk)
	return len(pk.data), nil
}

// ReservePack prepares m to be packed by Repack on another goroutine while
// MatMul runs on m (or on copies of it made after this call): it checks m
// (the errors of Supported) and gives it the slot Repack then fills
// atomically, so Repack no longer writes the Matrix itself. MatMul reads the
// plain rows until the packed copy is published; both give the same bits
// (the kernel oracles at every level). Types Repack leaves as they are get
// no slot.
func (m *Matrix) ReservePack() error {
	if err := m.Supported(); err != nil {
		return err
	}
	if Packable(m.Type) && m.pk == nil {
		m.pk = new(packSlot)
	}
	return nil
}

// hugePage is the size of a transparent huge page on x86-64 and arm64
// Linux (2 MiB).
const hugePage = 2 << 20

// alignedBytes returns n zero bytes starting at a 64-byte boundary. From
// hugePage bytes on they start at a hugePage boundary and are asked to be
// backed by transparent huge pages (adviseHugePages), before anything
// writes them: a decode streams every packed matrix once per forward pass,
// and with 4 KiB pages each page costs a TLB miss and a page walk on the
// way (docs/PERFORMANCE.md, "Huge pages for the packed weights"). The
// advice is only advice: where the kernel or the platform gives no huge
// pages the bytes are the same. The advice stays on the range when the
// matrix is freed and the Go heap reuses it.
func alignedBytes(n int) []byte {
	align := 64
	if n >= hugePage {
		align = hugePage
	}
	b := make([]byte, n+align-1)
	off := (align - int(uintptr(unsafe.Pointer(&b[0]))&uintptr(align-1))) & (align - 1)
	b = b[off : off+n : off+n]
	if align == hugePage {
		adviseHugePages(b[:n/hugePage*hugePage])
	}
	return b
}

// packMatrix packs rows rows of nb blocks of typ from data (plain ggml rows).
func packMatrix(typ gguf.GGMLType, data []byte, rows, nb int) *packed {
	cb := packCodeBytes(typ)
	p := &packed{typ: typ, rows: rows, nb: nb, groups: (rows + packRows - 1) / packRows}
	p.groupSize = nb * (cb + 2*packRows) // Q1_0's segments: a block's code and scale sections
	if typ != gguf.Q1_0 {
		p.groupSize = nb * packBlockBytes(typ)
	}
	p.data = alignedBytes(p.groups * p.groupSize)
	bs := typ.TypeSize()
	rb := nb * bs
	for g := range p.groups {
		nr := min(packRows, rows-g*packRows)
		src := data[g*packRows*rb : (g*packRows+nr)*rb]
		for b := range nb {
			c, sc := p.block(g, b)
			for r := range nr {
				blk := src[r*rb+b*bs : r*rb+(b+1)*bs]
				var d []byte
				switch typ {
				case gguf.Q2_0:
					packQ2_0(blk[2:18], c, r)
					d = blk[:2]
				case gguf.Q1_0:
					packQ1_0(blk[2:18], c, r)
					d = blk[:2]
				case gguf.TQ2_0:
					packTQ2_0(blk[:64], c, r)
					d = blk[64:66]
				}
				copy(sc[2*r:], d)
			}
		}
	}
	return p
}

// spread2 maps a byte of four 2-bit codes to a word holding code j in the
// low bits of byte j: the 4×4 transpose of packQ2_0 is four lookups.
var spread2 = func() (t [256]uint32) {
	for b := range t {
		for j := range 4 {
			t[b] |= uint32(b>>(2*j)&3) << (8 * j)
		}
	}
	return t
}()

// packQ2_0 writes row r's 16 code bytes of one Q2_0 block into the block's
// code section c (four vectors of 64 bytes): byte j of vector 2s+g holds at
// bits 2n the code of weight 32s+16g+4n+j, which is code j of qs[8s+4g+n].
func packQ2_0(qs, c []byte, r int) {
	for v := range 4 {
		q := qs[4*v : 4*v+4]
		w := spread2[q[0]] | spread2[q[1]]<<2 | spread2[q[2]]<<4 | spread2[q[3]]<<6
		binary.LittleEndian.PutUint32(c[64*v+4*r:], w)
	}
}

// packQ1_0 writes row r's 16 bytes of sign bits of one Q1_0 block into the
// block's code section c (four vectors of 64 bytes): sub-block k's four
// bytes at 64k+4r.
func packQ1_0(qs, c []byte, r int) {
	for k := range 4 {
		copy(c[64*k+4*r:][:4], qs[4*k:4*k+4])
	}
}

// packTQ2_0 writes row r's 64 code bytes of one TQ2_0 block into the block's
// code section c (sixteen vectors of 64 bytes).
func packTQ2_0(qs, c []byte, r int) {
	for h := range 2 {
		for l := range 8 {
			copy(c[64*(8*h+l)+4*r:][:4], qs[32*h+4*l:])
		}
	}
}

// group returns group g's bytes (Q2_0 and TQ2_0: nb blocks of
// packBlockBytes, each its code section then its scale section; a Q1_0
// group is not contiguous: q1Seg).
func (p *packed) group(g int) []byte {
	if p.typ == gguf.Q1_0 {
		panic("quant: packed Q1_0 groups are stored by segments (q1Seg)")
	}
	return p.data[g*p.groupSize : (g+1)*p.groupSize]
}

// block returns block b of group g: its code section and its 32 scale
// bytes.
func (p *packed) block(g, b int) (code, scales []byte) {
	if p.typ == gguf.Q1_0 {
		seg, n := p.q1Seg(g, b/q1Chunk)
		i := b % q1Chunk
		return seg[256*i : 256*(i+1)], seg[256*n+32*i : 256*n+32*(i+1)]
	}
	cb, bb := packCodeBytes(p.typ), packBlockBytes(p.typ)
	blk := p.group(g)[bb*b : bb*(b+1)]
	return blk[:cb], blk[cb : cb+2*packRows]
}

// q1Band is the number of groups in a band of a packed Q1_0 matrix, and
// q1Chunk the number of blocks in a chunk (see the layout above): the
// lookup-table walk (tileQ1_0LUTGroups) runs a chunk of blocks on each
// group of a band in turn, so the chunk's tables (2 KB a block) stay in
// L1 for the band. A packed Q1_0 matrix goes to the workers as whole
// bands (runShares), so each worker reads in memory order. On Qwen3-8B-shaped
// matrices (207 MB, 2 threads, one process alternating the layouts) this
// order streamed 4-7 % faster than groups stored whole; bands of 8 and 16
// groups were level.
const (
	q1Band  = 8
	q1Chunk = 8
)

// q1Seg returns the segment of group g and chunk ch of a packed Q1_0
// matrix: n code sections of 256 bytes, then their n scale sections of 32
// bytes (n = q1Chunk, fewer in a row's last chunk), the bytes of
// tileQ1_0LAVX512's codes and scales for those blocks.
func (p *packed) q1Seg(g, ch int) (seg []byte, n int) {
	off, n := p.q1SegOff(g, ch)
	return p.data[off : off+n*(256+32)], n
}

// q1SegOff returns the offset in p.data of q1Seg(g, ch) and its n.
func (p *packed) q1SegOff(g, ch int) (off, n int) {
	const sb = 256 + 32
	b0 := g / q1Band * q1Band
	ng := min(q1Band, p.groups-b0)
	n = min(q1Chunk, p.nb-ch*q1Chunk)
	return b0*p.nb*sb + ng*ch*q1Chunk*sb + (g-b0)*n*sb, n
}

func (p *packed) String() string {
	return fmt.Sprintf("%s packed: %d rows in %d groups of %d, %d blocks per row", p.typ, p.rows, p.groups, packRows, p.nb)
}
