// training.init_weights: a fresh run starts from the named weights (relative to the project's
// folder); a layer whose name is not in the file (a replaced head) keeps its initialisation with
// a warning; a resume starts from its checkpoint instead.
#include <myelin/io/project.h>
#include <myelin/io/safetensors.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

using namespace myelin;
using namespace myelin::train;

class TestInitWeights : public QObject {
    Q_OBJECT

  private slots:
    void aFreshRunStartsFromTheProjectsWeights() {
        const std::string examples = std::string(MYELIN_SOURCE_DIR) + "/resources/examples";
        io::Project project = io::load_project(examples + "/tabular_regression.myelin");
        QTemporaryDir dir;
        // Weights of a first Trainer, all set to 0.25, written beside a copy of the project.
        TrainerOptions first;
        first.project_dir = examples;
        Trainer source(project, first);
        nn::StateDict state = source.model().state_dict();
        // The last layer with weights is left out (as a replaced head): kept initialised.
        const std::string head = state.back().first.substr(0, state.back().first.find('.'));
        auto is_head = [&](const std::string& name) { return name.rfind(head + ".", 0) == 0; };
        io::NamedTensors weights;
        for (const auto& [name, t] : state)
            if (!is_head(name)) weights.emplace_back(name, full(t.sizes(), 0.25));
        io::save_safetensors(dir.filePath(QStringLiteral("w.safetensors")).toStdString(), weights);
        project.train.init_weights = "w.safetensors";
        TrainerOptions options;
        options.project_dir = dir.path().toStdString(); // where "w.safetensors" resolves
        // The data path of the example is relative to its folder: point at it absolutely.
        project.data.source.options.set("path", examples + "/data/tabular_regression.csv");
        Trainer trainer(project, options);
        int checked = 0;
        for (const auto& [name, t] : trainer.model().state_dict()) {
            const Tensor c = t.contiguous().to(DType::Float64).contiguous();
            const bool all = c.numel() > 0 && c.data<double>()[0] == 0.25;
            if (is_head(name))
                QVERIFY2(!all, name.c_str());
            else
                QVERIFY2(all, name.c_str());
            ++checked;
        }
        QVERIFY(checked >= 4);
    }
};

QTEST_GUILESS_MAIN(TestInitWeights)
#include "test_init_weights.moc"
