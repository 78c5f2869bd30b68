package membw

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestReadSumsEveryWord: Read's checksum is the sum of the buffer's
// little-endian words (and trailing bytes), for lengths around the 128-byte
// stride.
func TestReadSumsEveryWord(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 7, 128, 200, 4096, 4096 + 129} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		var want uint64
		w := n &^ 127
		for i := 0; i < w; i += 8 {
			want += binary.LittleEndian.Uint64(b[i:])
		}
		for _, v := range b[w:] {
			want += uint64(v)
		}
		if got := Read(b); got != want {
			t.Errorf("n=%d: %d, want %d", n, got, want)
		}
	}
}
