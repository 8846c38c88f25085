"""The exporters from Python: the library's, the same files as the CLI's.

Each writes through memplan.h (writeTflite, writePte, writeCHeader,
writeHtml, writeSvg), like `memplan plan --write-tflite/--write-pte/--emit-c
/--html/--svg`; the tests check what the written files hold.
"""

import shutil
import subprocess

import pytest

import memplan
from conftest import DATA, ROOT, cli, missing_data, model

SELFIE = "selfie_segmentation/selfie_segmentation.tflite"
PTE = DATA / "executorch-programs" / "keyword_spotting.pte"


def run_cli(*args):
    done = subprocess.run([str(cli()), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def test_write_tflite_carries_the_plans_offsets(tmp_path):
    path = model(SELFIE)
    plan = memplan.plan(path)
    out = tmp_path / "planned.tflite"
    plan.write_tflite(out)
    # Read back, the copy carries TFLite Micro's offline plan: every planned
    # tensor pinned where the plan put it.
    carried = memplan.carried_plan(memplan.read(out))
    assert carried.carried
    planned = {a.name: a.offset for a in plan.allocations}
    pinned = {a.name: a.offset for a in carried.allocations}
    assert len(pinned) == len(planned) == 247
    assert pinned == planned
    assert memplan.verify(carried).ok
    # The CLI writes the same bytes.
    cli_out = tmp_path / "cli.tflite"
    run_cli("plan", "-q", path, "--write-tflite", cli_out)
    assert out.read_bytes() == cli_out.read_bytes()
    # Only a .tflite can carry one.
    with pytest.raises(memplan.InputError, match=r"^Plan.write_tflite: .* is not a .tflite model"):
        memplan.plan(DATA.parent.parent / "examples" / "graphs" / "mlp.json").write_tflite(tmp_path / "x.tflite")


def test_tflite_micro_bytes_match_the_cli_report():
    path = model(SELFIE)
    plan = memplan.plan(path)
    assert plan.tflite_micro_bytes == 4194304  # TFLite Micro's own planner (README)
    assert plan.total == 3670016
    report = run_cli("plan", "--bytes", path).stdout
    assert "would need 4.0 MiB (4194304 B)" in report
    assert memplan.plan(DATA.parent.parent / "examples" / "graphs" / "mlp.json").tflite_micro_bytes is None


def test_write_pte_is_the_clis_file(tmp_path):
    if not PTE.is_file():
        missing_data(str(PTE))
    program = memplan.read(PTE)
    assert program.kind == "pte"
    plan = memplan.plan(program)
    out = tmp_path / "py.pte"
    plan.write_pte(out)
    cli_out = tmp_path / "cli.pte"
    run_cli("plan", "-q", PTE, "--write-pte", cli_out)
    assert out.read_bytes() == cli_out.read_bytes()
    # The written program carries the plan: its own plan is this one.
    again = memplan.read(out)
    carried = memplan.carried_plan(again)
    assert [g.bufsizes for g in carried.graphs] == [g.bufsizes for g in plan.graphs]
    assert memplan.verify(carried).ok
    # A request field the file fixes is named as the argument was typed.
    with pytest.raises(memplan.InputError, match=r"^per_device: does not apply to .*keyword_spotting.pte"):
        memplan.plan(program, per_device=True)
    with pytest.raises(memplan.InputError, match=r"^Plan.write_pte: .* is not an ExecuTorch program"):
        memplan.plan(DATA.parent.parent / "examples" / "graphs" / "mlp.json").write_pte(tmp_path / "x.pte")


def test_emit_c_compiles_and_holds_the_plan(tmp_path):
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        missing_data("a C compiler (cc)")
    source = ROOT / "examples" / "graphs" / "mlp.json"
    plan = memplan.plan(source)
    header = tmp_path / "mlp_plan.h"
    plan.emit_c(header, prefix="mlp")
    cli_header = tmp_path / "cli.h"
    run_cli("plan", "-q", source, "--emit-c", cli_header, "--c-prefix", "mlp")
    assert header.read_text() == cli_header.read_text()
    main = tmp_path / "main.c"
    main.write_text('#include <stdio.h>\n#include "mlp_plan.h"\n'
                    "int main(void) {\n"
                    '  printf("%llu\\n", (unsigned long long)mlp_pool_size[1]);\n'
                    "  return 0;\n}\n")
    exe = tmp_path / "main"
    subprocess.run([compiler, "-std=c99", "-Wall", "-Werror", "-pedantic", f"-I{tmp_path}", str(main),
                    "-o", str(exe)], check=True)
    printed = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert int(printed) == plan.bufsizes[1] == 33296
    with pytest.raises(memplan.InputError, match=r"'1x' is not a C identifier"):
        plan.emit_c(tmp_path / "bad.h", prefix="1x")


def test_write_html_and_svg_are_the_clis_files(tmp_path):
    source = ROOT / "examples" / "graphs" / "mlp.json"
    plan = memplan.plan(source)
    plan.write_html(tmp_path / "py.html")
    plan.write_svg(tmp_path / "py.svg")
    run_cli("plan", "-q", source, "--html", tmp_path / "cli.html", "--svg", tmp_path / "cli.svg")
    assert (tmp_path / "py.html").read_bytes() == (tmp_path / "cli.html").read_bytes()
    assert (tmp_path / "py.svg").read_bytes() == (tmp_path / "cli.svg").read_bytes()
    assert "<title>mlp.json" in (tmp_path / "py.html").read_text()


def test_a_plan_is_refused_where_a_model_is_expected(tmp_path):
    source = ROOT / "examples" / "graphs" / "mlp.json"
    plan_file = tmp_path / "mlp.plan.json"
    memplan.plan(source).write(plan_file)
    with pytest.raises(memplan.InputError, match=r"this is a memplan plan, not a model"):
        memplan.read(plan_file)


def test_import_options_that_do_not_apply_are_refused():
    with pytest.raises(memplan.InputError,
                       match=r"^input_shapes: applies to ONNX models only; .*mlp.json is a memplan graph"):
        memplan.read(ROOT / "examples" / "graphs" / "mlp.json", input_shapes={"x": [1, 2]})


def test_the_namespace_holds_only_memplans_names():
    public = {n for n in dir(memplan) if not n.startswith("_")}
    public.discard("executorch")  # the plug-in submodule, once imported
    assert public == set(memplan.__all__)
