//go:build !amd64

package quant

func missingFeatures(l Level) []string {
	if l > LevelGeneric {
		return []string{"amd64"}
	}
	return nil
}
