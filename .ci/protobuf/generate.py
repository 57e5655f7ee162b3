#!/usr/bin/env python3
"""Generates src/protobuf/tables.rs: the field numbers, types and JSON names of every built-in
Kubernetes message, from the Kubernetes sources (facts only: names and numbers).

Inputs: git clones of k8s.io/api, k8s.io/apimachinery and k8s.io/apiextensions-apiserver
(their `generated.proto` for field numbers and message types; the Go struct tags of their
`*.go` files for the JSON name, omitempty/omitzero, `,inline` and pointer-ness).

    .ci/protobuf/generate.py --api DIR --apimachinery DIR --apiextensions DIR \
        [--ref v0.36.2] > src/protobuf/tables.rs

Reads the files with `git show REF:path`, so the clones need not be checked out.
"""
import argparse
import re
import subprocess
import sys

KUBERNETES = "1.36.2"

SCALARS = {"string": "S", "bytes": "B", "int32": "I32", "int64": "I64", "bool": "Bool", "double": "F64"}

# Messages whose JSON form is not their fields (custom MarshalJSON in Go).
SPECIAL = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration": "Duration",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "Quantity",
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue": "Quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "IntOrString",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "RawJson",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "RawJson",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON": "RawJson",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JSON": "RawJson",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": "SchemaOrArray",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JSONSchemaPropsOrArray": "SchemaOrArray",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": "SchemaOrBool",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JSONSchemaPropsOrBool": "SchemaOrBool",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": "SchemaOrStrings",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JSONSchemaPropsOrStringArray": "SchemaOrStrings",
}

# Flags (must match src/protobuf/descriptor.rs).
REPEATED, MAP, POINTER, OMITEMPTY, INLINE, OMITZERO, NOJSON = 1, 2, 4, 8, 16, 32, 64


def git(repo, ref, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def files(repo, ref):
    return git(repo, ref, "ls-tree", "-r", "--name-only", ref).split("\n")


def show(repo, ref, path):
    return git(repo, ref, "show", f"{ref}:{path}")


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def parse_proto(text):
    text = strip_comments(text)
    package = re.search(r"^package ([\w.]+);", text, re.M).group(1)
    messages = {}
    for m in re.finditer(r"^message (\w+) \{(.*?)^\}", text, re.M | re.S):
        fields = []
        for f in re.finditer(r"^\s+(optional|repeated) ([\w.]+) (\w+) = (\d+)", m.group(2), re.M):
            fields.append((f.group(1) == "repeated", None, f.group(2), f.group(3), int(f.group(4))))
        for f in re.finditer(r"^\s+map<(\w+), ([\w.]+)> (\w+) = (\d+)", m.group(2), re.M):
            assert f.group(1) == "string", f.group(0)
            fields.append((False, "map", f.group(2), f.group(3), int(f.group(4))))
        assert not re.search(r"^\s*(oneof|message|enum) ", m.group(2), re.M), m.group(1)
        messages[m.group(1)] = fields
    return package, messages


def parse_go(texts):
    """Struct name -> {field number: (json name, omitempty, omitzero, inline, pointer)};
    and the names of slice types (`type Verbs []string`)."""
    structs, slices = {}, set()
    for text in texts:
        for s in re.finditer(r"^type (\w+) \[\]\w+\s*$", text, re.M):
            slices.add(s.group(1))
        for s in re.finditer(r"^type (\w+) struct \{(.*?)^\}", text, re.M | re.S):
            fields = {}
            for line in s.group(2).split("\n"):
                tag = re.search(r"`(.*)`", line)
                if not tag or "protobuf:" not in tag.group(1):
                    continue
                proto = re.search(r'protobuf:"(\w+),(\d+),', tag.group(1))
                if not proto or line.strip().startswith("//"):
                    continue
                js = re.search(r'json:"([^"]*)"', tag.group(1))
                decl = line[: tag.start()].split()
                gotype = decl[-1]
                opts = js.group(1).split(",") if js else [""]
                fields[int(proto.group(2))] = (
                    opts[0] if js else None,
                    "omitempty" in opts[1:],
                    "omitzero" in opts[1:],
                    "inline" in opts[1:],
                    gotype.startswith("*"),
                )
            structs[s.group(1)] = fields
    return structs, slices


def group_of(texts):
    for text in texts:
        g = re.search(r"^// \+groupName=([\w.]*)", text, re.M)
        if g:
            return g.group(1)
    for text in texts:
        g = re.search(r'^const GroupName = "([\w.]*)"', text, re.M)
        if g:
            return g.group(1)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True)
    ap.add_argument("--apimachinery", required=True)
    ap.add_argument("--apiextensions", required=True)
    ap.add_argument("--ref", default="v0.36.2")
    a = ap.parse_args()

    packages = []  # (proto package, apiVersion, {name: fields}, structs, slices)
    for repo in (a.api, a.apimachinery, a.apiextensions):
        names = files(repo, a.ref)
        for path in names:
            if not path.endswith("/generated.proto") or "testapigroup" in path or "/testdata/" in path:
                continue
            d = path.rsplit("/", 1)[0]
            package, messages = parse_proto(show(repo, a.ref, path))
            gofiles = [p for p in names if p.startswith(d + "/") and "/" not in p[len(d) + 1:]
                       and p.endswith(".go") and not p.endswith("_test.go") and "zz_generated" not in p
                       and not p.endswith(".pb.go")]
            texts = [show(repo, a.ref, p) for p in gofiles]
            structs, slices = parse_go(texts)
            group = group_of(texts)
            version = d.rsplit("/", 1)[1]
            if package == "k8s.io.api.core.v1":
                group = ""
            api_version = "" if group is None else (f"{group}/{version}" if group else version)
            packages.append((package, api_version, messages, structs, slices))

    full = {}
    for pi, (package, _, messages, structs, slices) in enumerate(packages):
        for name in messages:
            full[f"{package}.{name}"] = (pi, name)
    order = sorted(full)
    index = {n: i for i, n in enumerate(order)}

    def resolve(package, t):
        if t in SCALARS:
            return SCALARS[t]
        n = t[1:] if t.startswith(".") else f"{package}.{t}"
        assert n in index, (package, t)
        return f"M({index[n]})"

    out = []
    out.append(f"// @generated by .ci/protobuf/generate.py from Kubernetes v{KUBERNETES} (k8s.io/api,")
    out.append(f"// k8s.io/apimachinery, k8s.io/apiextensions-apiserver at {a.ref}): proto message names,")
    out.append("// field numbers and types, and the JSON names and flags of the Go struct tags. Do not edit.")
    out.append("")
    out.append("use super::descriptor::{Field as F, Kind::*, MessageDesc, Special};")
    out.append("")
    out.append("pub(crate) static PACKAGES: &[(&str, &str)] = &[")
    for package, api_version, *_ in packages:
        out.append(f'    ("{package}", "{api_version}"),')
    out.append("];")
    out.append("")
    out.append("pub(crate) static MESSAGES: &[MessageDesc] = &[")
    for n in order:
        pi, name = full[n]
        package, _, messages, structs, slices = packages[pi]
        gofields = structs.get(name, {})
        special = SPECIAL.get(n, "None")
        if special == "None" and name in slices:
            special = "Items"
        fs = []
        for repeated, kind, t, pname, number in sorted(messages[name], key=lambda f: f[4]):
            flags = 0
            if repeated:
                flags |= REPEATED
            if kind == "map":
                flags |= MAP
            js, omitempty, omitzero, inline, pointer = gofields.get(number, (pname, True, False, False, True))
            if js is None or js == "-":
                flags |= NOJSON
                js = pname
            if omitempty:
                flags |= OMITEMPTY
            if omitzero:
                flags |= OMITZERO
            if inline:
                flags |= INLINE
            if pointer:
                flags |= POINTER
            assert number < 64, (n, number)  # the decoder keeps per-message sets of fields in a u64
            fs.append(f'F({number}, "{js}", {resolve(package, t)}, {flags})')
        out.append(f'    MessageDesc {{ package: {pi}, name: "{name}", special: Special::{special}, fields: &[{", ".join(fs)}] }},')
    out.append("];")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
