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
	pkgs := loadModule(t)
	askedFor := methodsAskedFor(pkgs)
	exported := map[string]string{} // position -> package.Name
	used := map[string]bool{}
	for _, p := range pkgs {
		addExported(p, askedFor, exported)
		addUsedOutside(p, used)
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

// exportsChecked are the packages whose exported names
// TestExportsUsedOutside holds to what other packages use.
var exportsChecked = []string{"aipm/fsstore", "aipm/fsstore/internal/storage"}

// loadModule loads and type-checks every package of the module, tests
// included; the test fails when the module does not type-check.
func loadModule(t *testing.T) []*packages.Package {
	t.Helper()
	cfg := &packages.Config{Dir: "..", Tests: true, Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports | packages.NeedDeps}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the module does not type-check")
	}
	return pkgs
}

// methodsAskedFor is the set of method names some interface of pkgs or
// their dependencies declares, and those the standard library calls by
// name (String, Error, MarshalJSON and the like): a method so named is
// exported for them, not for a caller.
func methodsAskedFor(pkgs []*packages.Package) map[string]bool {
	askedFor := map[string]bool{}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if p.Types == nil {
			return
		}
		for _, name := range p.Types.Scope().Names() {
			if it, ok := interfaceNamed(p.Types.Scope().Lookup(name)); ok {
				for m := range it.Methods() {
					askedFor[m.Name()] = true
				}
			}
		}
	})
	for _, n := range []string{"String", "Error", "Unwrap", "Is", "As", "Format", "MarshalText", "UnmarshalText", "MarshalJSON", "UnmarshalJSON", "LogValue"} {
		askedFor[n] = true
	}
	return askedFor
}

// interfaceNamed is the interface obj names, if it is a type name for one.
func interfaceNamed(obj types.Object) (*types.Interface, bool) {
	tn, ok := obj.(*types.TypeName)
	if !ok {
		return nil, false
	}
	it, ok := tn.Type().Underlying().(*types.Interface)
	return it, ok
}

// addExported adds to exported, by position, the names p defines outside
// its test files that the check holds to being used: the package-level
// exported names of the checked packages, fields and the methods
// askedFor names aside.
func addExported(p *packages.Package, askedFor map[string]bool, exported map[string]string) {
	for id, obj := range p.TypesInfo.Defs {
		if obj == nil || !obj.Exported() || !slices.Contains(exportsChecked, obj.Pkg().Path()) || strings.HasSuffix(p.Fset.Position(id.Pos()).Filename, "_test.go") {
			continue
		}
		if isFieldOrAskedFor(obj, askedFor) {
			continue
		}
		if obj.Parent() != nil && obj.Parent() != obj.Pkg().Scope() {
			continue // a local name
		}
		exported[objectAt(p.Fset, obj)] = obj.Pkg().Name() + "." + qualifiedName(obj)
	}
}

// isFieldOrAskedFor says whether obj is a struct field, or a method whose
// name askedFor holds.
func isFieldOrAskedFor(obj types.Object, askedFor map[string]bool) bool {
	switch o := obj.(type) {
	case *types.Var:
		return o.IsField()
	case *types.Func:
		return o.Signature().Recv() != nil && askedFor[o.Name()]
	}
	return false
}

// addUsedOutside marks in used, by position, the names of the checked
// packages that p uses when p is not their own package (its external
// test package counts as its own): named, handled as a value's type, or
// selected.
func addUsedOutside(p *packages.Package, used map[string]bool) {
	path := strings.TrimSuffix(strings.Fields(p.ID)[0], "_test")
	outside := func(obj types.Object) bool {
		return slices.Contains(exportsChecked, pkgPath(obj)) && pkgPath(obj) != path
	}
	for _, obj := range p.TypesInfo.Uses {
		if obj == nil || !outside(obj) {
			continue
		}
		if f, ok := obj.(*types.Func); ok && f.Origin() != nil {
			obj = f.Origin()
		}
		used[objectAt(p.Fset, obj)] = true
	}
	// A type is used where a value of it is handled, named or not.
	for _, tv := range p.TypesInfo.Types {
		markNamed(tv.Type, func(obj types.Object) {
			if outside(obj) {
				used[objectAt(p.Fset, obj)] = true
			}
		})
	}
	for _, sel := range p.TypesInfo.Selections {
		obj := sel.Obj()
		if !outside(obj) {
			continue
		}
		if f, ok := obj.(*types.Func); ok {
			obj = f.Origin()
		}
		used[objectAt(p.Fset, obj)] = true
	}
}

// objectAt is where obj is defined, as a key of exported and used.
func objectAt(fset *token.FileSet, obj types.Object) string {
	return fset.Position(obj.Pos()).String()
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
