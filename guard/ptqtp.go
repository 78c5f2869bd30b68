package guard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/ternary"
)

// PTQTPReport describes the PTQTP trit-plane matrices of a file (package ternary; Fucina's format): matrices
// stored as "<name>.ptqtp0" … plane tensors, marked by the fucina.ptqtp.version key.
type PTQTPReport struct {
	Version      *uint32  `json:"version,omitempty"` // fucina.ptqtp.version when it is a u32
	Matrices     int      `json:"matrices"`          // base names with plane tensors
	PlaneTensors int      `json:"plane_tensors"`     // plane tensors in all
	PlaneTypes   []string `json:"plane_types"`       // the planes' types, sorted (TQ2_0: Fucina's; Q2_0: bankml's 64-groups)
	Example      string   `json:"example"`           // the first plane tensor's name
}

// planeSet is what the header says of one matrix's planes.
type planeSet struct {
	present [3]bool
	types   [3]uint32
	shapes  [3][maxDims]int64
	nd      [3]int
}

// ptqtpReasons judges the PTQTP planes of h for the engine and returns the reasons to refuse (and the report, nil
// for a file without plane tensors or the key). On mainline and prism any plane tensor is refused: the file is
// bankml/Fucina-only (bankml-only with Q2_0 planes, which Fucina does not read). On bankml the planes must be
// those ternary.LoadPlanes loads: fucina.ptqtp.version a u32 1, the planes of each matrix 0, 1, 2 in order without
// gaps, of one type, TQ2_0 or Q2_0, and one 2-D shape.
func ptqtpReasons(h *header, engine Engine) ([]string, *PTQTPReport) {
	sets := map[string]*planeSet{}
	var bases []string
	rep := &PTQTPReport{}
	types := map[string]bool{}
	for _, t := range h.tensors {
		base, p, ok := ternary.ParsePlaneName(t.name)
		if !ok {
			continue
		}
		s := sets[base]
		if s == nil {
			s = &planeSet{}
			sets[base] = s
			bases = append(bases, base)
		}
		s.present[p], s.types[p], s.shapes[p], s.nd[p] = true, t.typ, t.ne, t.nd
		rep.PlaneTensors++
		if rep.Example == "" {
			rep.Example = t.name
		}
		types[TypeName(gguf.GGMLType(t.typ))] = true
	}
	key, hasKey := h.kv[ternary.VersionKey]
	if hasKey && key.typ == gguf.Uint32 {
		v := uint32(key.bits)
		rep.Version = &v
	}
	if rep.PlaneTensors == 0 && !hasKey {
		return nil, nil
	}
	rep.Matrices = len(bases)
	for name := range types {
		rep.PlaneTypes = append(rep.PlaneTypes, name)
	}
	slices.Sort(rep.PlaneTypes)
	if rep.PlaneTensors == 0 {
		return nil, rep // the key alone changes nothing for any loader
	}

	version := "no " + ternary.VersionKey
	if hasKey {
		version = fmt.Sprintf("%s %s", ternary.VersionKey, describeVersion(key))
	}
	if engine != Bankml {
		who := "bankml/Fucina-only"
		if types["Q2_0"] {
			who = "bankml-only (Q2_0 planes of 64-weight groups; Fucina reads TQ2_0 planes only)"
		}
		return []string{fmt.Sprintf("PTQTP trit-plane file: %d matrices stored as %d plane tensors (%s, e.g. %q), %s: %s; "+
			"mainline llama.cpp cannot run it (each plane is a valid tensor, but a layer is the sum of its planes and "+
			"llama.cpp's loaders know neither the names nor the sum); judge it with --engine bankml",
			rep.Matrices, rep.PlaneTensors, strings.Join(rep.PlaneTypes, ", "), rep.Example, version, who)}, rep
	}

	var out []string
	switch {
	case !hasKey:
		out = append(out, fmt.Sprintf("%d plane tensors (e.g. %q) without %s: no loader reads them", rep.PlaneTensors, rep.Example, ternary.VersionKey))
	case key.typ != gguf.Uint32 || key.bits != ternary.Version:
		out = append(out, fmt.Sprintf("%s is %s; bankml reads version %d (a u32)", ternary.VersionKey, describeVersion(key), ternary.Version))
	}
	var bad []string
	for _, base := range bases {
		if why := sets[base].problem(base); why != "" {
			bad = append(bad, why)
		}
	}
	if len(bad) > 0 {
		out = append(out, bad[0]+andMoreMatrices(len(bad)))
	}
	return out, rep
}

// problem returns why ternary.LoadPlanes would refuse the matrix base's planes, or "".
func (s *planeSet) problem(base string) string {
	for p := range 3 {
		if !s.present[p] {
			continue
		}
		name := ternary.PlaneName(base, p)
		switch {
		case !s.present[0] || !s.present[max(p-1, 0)]:
			return fmt.Sprintf("%q lacks the planes before it: planes fill in order from .ptqtp0", name)
		case s.types[p] != uint32(gguf.TQ2_0) && s.types[p] != uint32(gguf.Q2_0):
			return fmt.Sprintf("plane %q is %s, want TQ2_0 or Q2_0", name, TypeName(gguf.GGMLType(s.types[p])))
		case s.types[p] != s.types[0]:
			return fmt.Sprintf("plane %q is %s, plane 0 is %s", name, TypeName(gguf.GGMLType(s.types[p])), TypeName(gguf.GGMLType(s.types[0])))
		case s.nd[p] != 2 || s.shapes[p] != s.shapes[0]:
			return fmt.Sprintf("plane %q has shape %v, want 2-D and the shape of plane 0 %v", name, s.shapes[p][:s.nd[p]], s.shapes[0][:s.nd[0]])
		}
	}
	return ""
}

// andMoreMatrices returns " (N matrices in all)" for n > 1.
func andMoreMatrices(n int) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf(" (%d matrices in all)", n)
}

// describeVersion names the version key's value for a reason.
func describeVersion(v value) string {
	if n, ok := v.uint(); ok && v.typ != gguf.TypeArray && v.typ != gguf.String {
		return fmt.Sprintf("%s %d", v.typ, n)
	}
	return v.describe()
}
