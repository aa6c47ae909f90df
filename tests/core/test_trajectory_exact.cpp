// Speed work must not change numerics: the shipped Fashion-MNIST examples, trained from their
// seed with capture as shipped on 2 threads, give bit for bit the losses recorded in
// tests/golden/trajectory_losses.txt (written by gen_trajectory_losses.sh before the speed work,
// re-recorded once when float32 linear moved to oneDNN's matmul: its header names the commit).
// The bits belong to the CPU's kernels (OpenBLAS core, vector ISA), so on another CPU the test
// skips, naming both.
#include <myelin/device.h>
#include <myelin/io/project.h>
#include <myelin/train/events.h>
#include <myelin/train/trainer.h>

#include <QtTest>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace myelin;

namespace {

const std::filesystem::path kSource = MYELIN_SOURCE_DIR;

struct Trajectory {
    std::string example;
    int64_t steps = 0;
    std::vector<double> losses;
};

struct Fixture {
    std::string cpu;
    std::vector<Trajectory> cases;
};

Fixture load_fixture() {
    std::ifstream in(kSource / "tests/golden/trajectory_losses.txt");
    Fixture f;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string head;
        words >> head;
        if (head == "cpu") {
            std::getline(words >> std::ws, f.cpu);
        } else if (head == "case") {
            Trajectory t;
            words >> t.example >> t.steps;
            f.cases.push_back(t);
        } else if (!f.cases.empty()) {
            f.cases.back().losses.push_back(std::strtod(line.c_str(), nullptr));
        }
    }
    return f;
}

// "AVX-512 Cooperlake": the vector ISA our kernels and oneDNN use, and OpenBLAS's core.
std::string this_cpu() {
    std::string details = available_backends().at(0).details; // "2 threads, AVX-512"
    const auto comma = details.find(", ");
    std::string isa = comma == std::string::npos ? details : details.substr(comma + 2);
    using CoreName = char* (*)();
    auto core = reinterpret_cast<CoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    return isa + " " + (core ? core() : "unknown-blas");
}

std::string bits(double x) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g (%a)", x, x);
    return text;
}

} // namespace

class TestTrajectoryExact : public QObject {
    Q_OBJECT
  private slots:
    void shipped_examples_bit_exact() {
        const Fixture fixture = load_fixture();
        QVERIFY2(fixture.cases.size() >= 2, "trajectory_losses.txt holds no cases");
        if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist"))
            QSKIP("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)");
        if (this_cpu() != fixture.cpu)
            QSKIP(qPrintable(
                QString("the losses were recorded on a %1 CPU; this one is %2: other "
                        "kernels, other bits")
                    .arg(QString::fromStdString(fixture.cpu), QString::fromStdString(this_cpu()))));
        for (const Trajectory& t : fixture.cases) {
            QCOMPARE(int64_t(t.losses.size()), t.steps);
            const auto path = kSource / "resources/examples" / (t.example + ".myelin");
            io::Project project = io::load_project(path);
            train::TrainerOptions options;
            options.project_dir = path.parent_path();
            options.max_steps = t.steps;
            options.threads = 2;
            train::Trainer trainer(project, options);
            std::vector<double> losses;
            train::CallbackSink sink([&](const train::Event& e) {
                if (auto* m = e.get<train::StepMetrics>()) losses.push_back(m->loss);
            });
            trainer.set_sink(&sink);
            const train::TrainResult result = trainer.run();
            QVERIFY2(result.error.empty(), result.error.c_str());
            QCOMPARE(int64_t(losses.size()), t.steps);
            for (size_t i = 0; i < losses.size(); ++i)
                QVERIFY2(std::memcmp(&losses[i], &t.losses[i], sizeof(double)) == 0,
                         qPrintable(QString("%1 step %2: loss %3, recorded %4")
                                        .arg(QString::fromStdString(t.example))
                                        .arg(i + 1)
                                        .arg(QString::fromStdString(bits(losses[i])),
                                             QString::fromStdString(bits(t.losses[i])))));
        }
    }
};

QTEST_APPLESS_MAIN(TestTrajectoryExact)
#include "test_trajectory_exact.moc"
