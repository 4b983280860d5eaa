package fsstore_test

import (
	"go/token"
	"go/types"
	"slices"
	"sort"
	"strings"
	"testing"

	"aipm/internal/testenv"

	"golang.org/x/tools/go/packages"
)

// TestExportsUsedOutside holds the rules package and the storage layer to
// the surface they need: every exported name (package-level, or a method
// that no interface asks for) is used by some other package of the module,
// tests included; a name only its own package uses is unexported.
func TestExportsUsedOutside(t *testing.T) {
	testenv.SkipIfShort(t, "loads and type-checks the whole module")
	checked := []string{"aipm/fsstore", "aipm/fsstore/internal/storage"}
	cfg := &packages.Config{Dir: "..", Tests: true, Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports | packages.NeedDeps}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the module does not type-check")
	}
	var fset *token.FileSet
	at := func(fs *token.FileSet, obj types.Object) string { return fs.Position(obj.Pos()).String() }
	exported := map[string]string{} // position -> package.Name
	used := map[string]bool{}
	askedFor := map[string]bool{} // method names some interface declares
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if p.Types == nil {
			return
		}
		for _, name := range p.Types.Scope().Names() {
			if tn, ok := p.Types.Scope().Lookup(name).(*types.TypeName); ok {
				if it, ok := tn.Type().Underlying().(*types.Interface); ok {
					for m := range it.Methods() {
						askedFor[m.Name()] = true
					}
				}
			}
		}
	})
	for _, n := range []string{"String", "Error", "Unwrap", "Is", "As", "Format", "MarshalText", "UnmarshalText", "MarshalJSON", "UnmarshalJSON", "LogValue"} {
		askedFor[n] = true
	}
	for _, p := range pkgs {
		fset = p.Fset
		path := strings.TrimSuffix(strings.Fields(p.ID)[0], "_test")
		own := func(obj types.Object) bool {
			return obj.Pkg() != nil && obj.Pkg().Path() == path
		}
		for id, obj := range p.TypesInfo.Defs {
			if obj == nil || !obj.Exported() || !slices.Contains(checked, obj.Pkg().Path()) || strings.HasSuffix(fset.Position(id.Pos()).Filename, "_test.go") {
				continue
			}
			switch o := obj.(type) {
			case *types.Var:
				if o.IsField() {
					continue
				}
			case *types.Func:
				if recv := o.Signature().Recv(); recv != nil && askedFor[o.Name()] {
					continue
				}
			}
			if obj.Parent() != nil && obj.Parent() != obj.Pkg().Scope() {
				continue // a local name
			}
			exported[at(fset, obj)] = obj.Pkg().Name() + "." + qualifiedName(obj)
		}
		for _, obj := range p.TypesInfo.Uses {
			if obj == nil || !slices.Contains(checked, pkgPath(obj)) || own(obj) {
				continue
			}
			if f, ok := obj.(*types.Func); ok && f.Origin() != nil {
				obj = f.Origin()
			}
			used[at(fset, obj)] = true
		}
		// A type is used where a value of it is handled, named or not.
		for _, tv := range p.TypesInfo.Types {
			markNamed(tv.Type, func(obj types.Object) {
				if slices.Contains(checked, pkgPath(obj)) && path != pkgPath(obj) {
					used[at(fset, obj)] = true
				}
			})
		}
		for _, sel := range p.TypesInfo.Selections {
			obj := sel.Obj()
			if !slices.Contains(checked, pkgPath(obj)) || path == pkgPath(obj) {
				continue
			}
			if f, ok := obj.(*types.Func); ok {
				obj = f.Origin()
			}
			used[at(fset, obj)] = true
		}
	}
	var unused []string
	for pos, name := range exported {
		if !used[pos] {
			unused = append(unused, name+" ("+pos+")")
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("%d exported names are used by no other package: unexport them, or use them where they belong:\n\t%s", len(unused), strings.Join(unused, "\n\t"))
	}
}

func pkgPath(obj types.Object) string {
	if obj.Pkg() == nil {
		return ""
	}
	return obj.Pkg().Path()
}

// qualifiedName is Name, or Type.Name for a method.
func qualifiedName(obj types.Object) string {
	if f, ok := obj.(*types.Func); ok {
		if recv := f.Signature().Recv(); recv != nil {
			t := recv.Type()
			if p, ok := t.(*types.Pointer); ok {
				t = p.Elem()
			}
			if n, ok := t.(*types.Named); ok {
				return n.Obj().Name() + "." + f.Name()
			}
		}
	}
	return obj.Name()
}

// markNamed calls mark with the named types t is made of: itself, or the
// element of a pointer, slice, array, map or channel, or a signature's
// parameters and results.
func markNamed(t types.Type, mark func(types.Object)) {
	switch t := t.(type) {
	case *types.Named:
		mark(t.Obj())
		for a := range t.TypeArgs().Types() {
			markNamed(a, mark)
		}
	case *types.Alias:
		markNamed(types.Unalias(t), mark)
	case *types.Pointer:
		markNamed(t.Elem(), mark)
	case *types.Slice:
		markNamed(t.Elem(), mark)
	case *types.Array:
		markNamed(t.Elem(), mark)
	case *types.Chan:
		markNamed(t.Elem(), mark)
	case *types.Map:
		markNamed(t.Key(), mark)
		markNamed(t.Elem(), mark)
	case *types.Signature:
		for v := range t.Params().Variables() {
			markNamed(v.Type(), mark)
		}
		for v := range t.Results().Variables() {
			markNamed(v.Type(), mark)
		}
	}
}
