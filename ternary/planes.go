package ternary

import (
	"errors"
	"fmt"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

// PTQTP files (Fucina's src/ptqtp_gguf.zig, format version 1): a matrix "<name>" is replaced by its planes
// "<name>.ptqtp0", "<name>.ptqtp1" and optionally "<name>.ptqtp2", in the base tensor's place and with its shape
// [in, rows]; the file carries the metadata key fucina.ptqtp.version = u32 1 once any matrix is stored so. Every
// other tensor and key is as in the source.
const (
	VersionKey = "fucina.ptqtp.version" // u32: the PTQTP format version of a file with plane tensors
	Version    = 1                      // the version this package writes and reads
	planeTag   = ".ptqtp"
)

// Errors of LoadPlanes, for errors.Is; Fucina's error names.
var (
	ErrUnsupportedVersion = errors.New("unsupported PTQTP version")        // fucina.ptqtp.version is not a u32 1
	ErrInvalidPlaneSet    = errors.New("invalid PTQTP plane set")          // a plane without the ones before it
	ErrPlaneType          = errors.New("PTQTP plane of the wrong type")    // not TQ2_0 or Q2_0, or types that differ
	ErrPlaneShape         = errors.New("PTQTP planes of different shapes") // not 2-D, or shapes that differ
)

// PlaneName returns the name of plane p (0, 1 or 2) of the matrix named base: base + ".ptqtp" + p.
func PlaneName(base string, p int) string { return fmt.Sprintf("%s%s%d", base, planeTag, p) }

// ParsePlaneName reports whether name is a plane tensor's name, "<base>.ptqtp0" to "<base>.ptqtp2" with a
// non-empty base, and returns the base and the plane. (Plane names do not end in ".weight", so quantizing a PTQTP
// file again leaves its planes alone.)
func ParsePlaneName(name string) (base string, p int, ok bool) {
	n := len(name)
	if n < len(planeTag)+2 || name[n-1] < '0' || name[n-1] > '2' || name[n-1-len(planeTag):n-1] != planeTag {
		return "", 0, false
	}
	return name[:n-1-len(planeTag)], int(name[n-1] - '0'), true
}

// FileVersion returns the file's PTQTP format version and whether the key is present. A key that is not a u32 is an
// error wrapping ErrUnsupportedVersion.
func FileVersion(f *gguf.File) (uint32, bool, error) {
	v, ok := f.Get(VersionKey)
	if !ok {
		return 0, false, nil
	}
	n, isInt := v.Uint64()
	if v.Type != gguf.Uint32 || !isInt {
		return 0, true, fmt.Errorf("ternary: %s is %s, want u32: %w", VersionKey, v.Type, ErrUnsupportedVersion)
	}
	return uint32(n), true, nil
}

// Linear is a weight matrix stored as PTQTP trit-planes: Planes[p] is plane p as a zero-copy quant.Matrix view of
// the file (Name the plane tensor's name, Type TQ2_0 or Q2_0, Rows = ne[1] outputs, Cols = ne[0] inputs). The layer
// it stands for is y = W·x with W the sum of the dequantized planes; bankml computes it as the plane products summed
// in plane order in float32, ((P0·x + P1·x) + P2·x), each product the plane type's matmul (one activation
// quantization for all planes: they share the type).
type Linear struct {
	Name   string         // the base tensor name, e.g. "blk.0.attn_q.weight"
	Planes []quant.Matrix // 1 to 3 planes, in plane order
}

// Rows returns the matrix's rows (outputs, ne[1]); Cols its row length (inputs, ne[0]).
func (l *Linear) Rows() int { return l.Planes[0].Rows }

// Cols returns the matrix's row length (inputs, ne[0]).
func (l *Linear) Cols() int { return l.Planes[0].Cols }

// LoadPlanes is the model loader's pair detection (Fucina's maybeLoadPlanes): when f carries fucina.ptqtp.version
// and a tensor "<name>.ptqtp0", it returns the matrix name as its plane set; otherwise nil and no error, and the
// caller loads the tensor name itself (a file without the key costs one lookup; a layer left in source precision
// inside a PTQTP file has no planes). Errors: a version other than u32 1 (ErrUnsupportedVersion), a plane without
// the planes before it (ErrInvalidPlaneSet; Fucina ignores planes 1 and 2 when plane 0 is missing), a plane that is not TQ2_0 or Q2_0 or not of the first plane's type (ErrPlaneType),
// a plane that is not 2-D or not of the first plane's shape (ErrPlaneShape). When the file also holds name itself,
// the planes win, as in Fucina. The views point into f's mapping: they are valid until f is closed.
func LoadPlanes(f *gguf.File, name string) (*Linear, error) {
	v, ok, err := FileVersion(f)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, nil
	case v != Version:
		return nil, fmt.Errorf("ternary: %s %d, this build reads %d: %w", VersionKey, v, Version, ErrUnsupportedVersion)
	}
	var infos []*gguf.TensorInfo
	for p := range 3 {
		ti, ok := f.Tensor(PlaneName(name, p))
		if !ok {
			for q := p + 1; q < 3; q++ {
				if _, later := f.Tensor(PlaneName(name, q)); later {
					return nil, fmt.Errorf("ternary: %s present without %s: %w", PlaneName(name, q), PlaneName(name, p), ErrInvalidPlaneSet)
				}
			}
			break
		}
		infos = append(infos, ti)
	}
	if len(infos) == 0 {
		return nil, nil
	}
	l := &Linear{Name: name}
	for _, ti := range infos {
		if ti.Type != gguf.TQ2_0 && ti.Type != gguf.Q2_0 || ti.Type != infos[0].Type {
			return nil, fmt.Errorf("ternary: %s is %s, want %s: %w", ti.Name, ti.Type, planeTypes(infos[0].Type), ErrPlaneType)
		}
		if len(ti.Ne) != 2 || ti.Ne[0] != infos[0].Ne[0] || ti.Ne[1] != infos[0].Ne[1] {
			return nil, fmt.Errorf("ternary: %s has shape %v, want 2-D %v: %w", ti.Name, ti.Ne, infos[0].Ne, ErrPlaneShape)
		}
		l.Planes = append(l.Planes, quant.Matrix{Name: ti.Name, Type: ti.Type, Rows: int(ti.Ne[1]), Cols: int(ti.Ne[0]), Data: f.TensorData(ti)})
	}
	return l, nil
}

func planeTypes(first gguf.GGMLType) string {
	if first == gguf.TQ2_0 || first == gguf.Q2_0 {
		return first.String()
	}
	return "tq2_0 or q2_0"
}

// PlaneSets lists the matrices of f stored as planes (the bases of the "<base>.ptqtpN" tensors, in file order of
// their first plane), for inspection and the guard.
func PlaneSets(f *gguf.File) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range f.Tensors {
		if base, _, ok := ParsePlaneName(t.Name); ok && !seen[base] {
			seen[base] = true
			out = append(out, base)
		}
	}
	return out
}
