"""Step 3 of the fine-tuning example (run.sh): the imported project made ready to fine-tune on all
ten Fashion-MNIST classes: the data section of the shipped fashion_cnn example, the head (the
last Linear) replaced by a new 10-class one (a new name, so --init-weights leaves it at its
initialisation), every other layer frozen, and two epochs of Adam.
    python3 make_finetune_project.py IMPORTED.myelin EXAMPLES_DIR OUT.myelin"""
import json
import sys


def main(imported, examples, out):
    project = json.load(open(imported))
    example = json.load(open(f"{examples}/fashion_cnn.myelin"))
    project["name"] = "Fine-tuned from PyTorch (10 classes)"
    project["data"] = example["data"]
    # The example's training settings, keeping the imported weights as the starting point.
    project["training"] = dict(example["training"], epochs=2,
                               init_weights=project["training"]["init_weights"])
    nodes = project["model"]["nodes"]
    head = [n for n in nodes if n["kind"] == "Linear"][-1]
    head["name"] = "head10"
    head["attrs"]["out_features"] = 10
    for n in nodes:
        if n is not head and n["kind"] not in ("Input", "Output"):
            n["frozen"] = True
    json.dump(project, open(out, "w"), indent=2)
    print(f"wrote {out}: head '{head['name']}' with 10 outputs, "
          f"{sum(1 for n in nodes if n.get('frozen'))} layers frozen")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
