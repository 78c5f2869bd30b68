//go:build !amd64

package membw

func readWide(b []byte) uint64 { return readWords(b) }
