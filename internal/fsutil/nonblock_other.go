//go:build !unix

package fsutil

const oNonblock = 0
