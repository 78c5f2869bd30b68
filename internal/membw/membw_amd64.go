package membw

import "golang.org/x/sys/cpu"

//go:noescape
func readWideAVX2(p *byte, n int) uint64

func readWide(b []byte) uint64 {
	if cpu.X86.HasAVX2 {
		return readWideAVX2(&b[0], len(b))
	}
	return readWords(b)
}
