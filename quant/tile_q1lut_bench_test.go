//go:build amd64

package quant

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/bankml/bankml/gguf"
)

// BenchmarkQ1_0DecodeTiles compares, side by side on the Qwen3-8B
// projection shapes and one thread, the AVX-512 Q1_0 decode tile before the
// lookup tables (tileQ1_0AVX512 on the former packed layout) and the
// lookup-table tile (tileQ1_0LAVX512, its tables built once per column as
// in Work.MatMul, not timed here: see the lut variant's build line).
func BenchmarkQ1_0DecodeTiles(b *testing.B) {
	if LevelAVX512.Check() != nil {
		b.Skip("no avx512")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, shape := range [][2]int{{4096, 4096}, {12288, 4096}, {4096, 12288}} {
		rows, cols := shape[0], shape[1]
		nb := cols / QK1_0
		w := randLowbitBlocks(r, rows*nb, BlockQ1_0Size)
		p := packMatrix(gguf.Q1_0, w, rows, nb)
		old := packMatrix(gguf.Q1_0, w, rows, nb)
		rb := nb * BlockQ1_0Size
		for g := range old.groups {
			codes, _ := old.group(g)
			for bl := range nb {
				packQ1_0Old(w[g*packRows*rb:], rb, bl*BlockQ1_0Size+2, packRows, codes[256*bl:256*(bl+1)])
			}
		}
		var a q8Act
		a.reset(cols, 1)
		a.quantize(LevelAVX512, 0, randRow(r, cols))
		a.fillLUT(LevelAVX512)
		out := make([]float32, 16)
		acc := make([]float32, 128)
		q := &a.qs[0]
		off := int(uintptr(unsafe.Pointer(&a.nqs[0])) - uintptr(unsafe.Pointer(q)))
		// The two tiles agree (the oracle tests check the new one).
		for g := range p.groups {
			c1, s1 := old.group(g)
			tileQ1_0AVX512(&c1[0], &s1[0], nb, q, off, &a.dy[0], a.k, 1, &acc[0], &out[0])
			o := out[0]
			c2, s2 := p.group(g)
			tileQ1_0LAVX512(&c2[0], &s2[0], nb, &a.lut[0], &out[0])
			if binary.LittleEndian.Uint32(unsafe.Slice((*byte)(unsafe.Pointer(&o)), 4)) != binary.LittleEndian.Uint32(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 4)) {
				b.Fatalf("group %d: old %g, lut %g", g, o, out[0])
			}
		}
		name := fmt.Sprintf("%dx%d", rows, cols)
		b.Run(name+"/old", func(b *testing.B) {
			for b.Loop() {
				for g := range old.groups {
					c, s := old.group(g)
					tileQ1_0AVX512(&c[0], &s[0], nb, q, off, &a.dy[0], a.k, 1, &acc[0], &out[0])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*nb), "ns/block")
		})
		b.Run(name+"/lut", func(b *testing.B) {
			for b.Loop() {
				for g := range p.groups {
					c, s := p.group(g)
					tileQ1_0LAVX512(&c[0], &s[0], nb, &a.lut[0], &out[0])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*nb), "ns/block")
		})
		b.Run(name+"/lut-build", func(b *testing.B) {
			for b.Loop() {
				a.fillLUT(LevelAVX512)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*nb), "ns/block")
		})
	}
}

// packQ1_0Old writes (the layout before the lookup-table tile) the 128 sign bits of one Q1_0 block of nr rows (row r's
// qs at src[r*rb+off:]) into the block's code section c (32 words of 8
// bytes, bit 4r+i of word 8k+j = weight 32k+4j+i of row r; rows past nr
// stay zero).
func packQ1_0Old(src []byte, rb, off, nr int, c []byte) {
	var bits [packRows][4]uint32
	for r := range nr {
		qs := src[r*rb+off : r*rb+off+16]
		for k := range 4 {
			bits[r][k] = binary.LittleEndian.Uint32(qs[4*k:])
		}
	}
	for k := range 4 {
		// a[p] byte j = nibble j of rows 2p (low) and 2p+1 (high): word j's
		// byte p. An 8×8 byte transpose (three rounds of swaps) makes a[j]
		// word j.
		var a [8]uint64
		for p := range a {
			a[p] = spreadNibblesOld(bits[2*p][k]) | spreadNibblesOld(bits[2*p+1][k])<<4
		}
		for i := range 4 {
			t := (a[i]>>32 ^ a[i+4]) & 0x00000000ffffffff
			a[i] ^= t << 32
			a[i+4] ^= t
		}
		for _, i := range [4]int{0, 1, 4, 5} {
			t := (a[i]>>16 ^ a[i+2]) & 0x0000ffff0000ffff
			a[i] ^= t << 16
			a[i+2] ^= t
		}
		for i := 0; i < 8; i += 2 {
			t := (a[i]>>8 ^ a[i+1]) & 0x00ff00ff00ff00ff
			a[i] ^= t << 8
			a[i+1] ^= t
		}
		for j, w := range a {
			binary.LittleEndian.PutUint64(c[8*(8*k+j):], w)
		}
	}
}

// spreadNibblesOld puts nibble j of x in the low half of byte j.
func spreadNibblesOld(x uint32) uint64 {
	v := uint64(x)
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	return (v | v<<4) & 0x0f0f0f0f0f0f0f0f
}
