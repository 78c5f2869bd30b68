//go:build !linux

package quant

// adviseHugePages does nothing outside Linux: the bytes stay on the
// platform's normal pages.
func adviseHugePages(b []byte) {}
