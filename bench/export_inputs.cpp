// Writes the examples `myelin eval --checkpoint CHECKPOINT` evaluates (its test split, else the
// validation split; after the project's deterministic transforms) as one safetensors file with
// the tensor "inputs" [N, ...] in dataset order, so runtimes outside Myelin can be fed exactly
// what Myelin's evaluation saw (bench/export_check_text.sh).
//   myelin_export_inputs CHECKPOINT OUT.safetensors
#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>
#include <myelin/io/safetensors.h>
#include <myelin/tensor.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/trainer.h>

#include <cstdio>

int main(int argc, char** argv) {
    using namespace myelin;
    if (argc != 3) {
        std::fprintf(stderr, "usage: myelin_export_inputs CHECKPOINT OUT.safetensors\n");
        return 2;
    }
    try {
        const io::Checkpoint checkpoint = io::load_checkpoint(argv[1]);
        const io::Project project = io::parse_project(checkpoint.project_json, argv[1]);
        auto trainer =
            train::trainer_for_checkpoint(project, checkpoint.description.project_dir, argv[1]);
        std::string split;
        const data::DatasetPtr dataset = train::evaluation_dataset(*trainer, &split);
        TensorList inputs;
        for (int64_t i = 0; i < dataset->size(); ++i)
            inputs.push_back(dataset->get(i).input);
        io::save_safetensors(argv[2], {{"inputs", stack(inputs, 0)}}, {{"split", split}});
        std::printf("wrote the %lld %s examples to %s\n", (long long)dataset->size(), split.c_str(),
                    argv[2]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "myelin_export_inputs: %s\n", e.what());
        return 1;
    }
    return 0;
}
