// Gradient through time: the per-time-step gradient norms recurrent layers record
// (nn/recurrent_gradients.h) against PyTorch (tests/golden/time_grads_f32/f64.txt, from
// gen_golden_time_grads.py), recording that changes nothing, the run store's table (round trip,
// bad input, a version-4 store migrated), and the trainer's probe on the word-language LSTM
// example (events, store rows, losses bit-identical with and without it).
#include <myelin/autograd.h>
#include <myelin/io/project.h>
#include <myelin/nn/recurrent.h>
#include <myelin/nn/recurrent_gradients.h>
#include <myelin/store/run_store.h>
#include <myelin/train/store_sink.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <sqlite3.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace myelin;

namespace {

struct GoldenTensor {
    Dims shape;
    std::vector<double> values;
};

struct GoldenCase {
    std::string name;
    std::string kind;
    int64_t input_size = 0, hidden_size = 0, num_layers = 1;
    bool bidirectional = false;
    std::vector<std::pair<std::string, GoldenTensor>> state;
    GoldenTensor x, lengths;
    std::vector<GoldenTensor> gouts;
    std::map<std::pair<int64_t, int>, std::vector<double>> norms; // (layer, direction)
};

GoldenTensor readTensor(std::istringstream& in) {
    std::string shape;
    in >> shape; // "[a,b,c]"
    GoldenTensor t;
    std::vector<int64_t> dims;
    std::istringstream s(shape.substr(1, shape.size() - 2));
    for (std::string d; std::getline(s, d, ',');)
        dims.push_back(std::stoll(d));
    t.shape = Dims(dims);
    for (double v; in >> v;)
        t.values.push_back(v);
    return t;
}

std::vector<GoldenCase> readGolden(const std::string& file) {
    std::ifstream in(std::string(MYELIN_SOURCE_DIR "/tests/golden/") + file);
    std::vector<GoldenCase> cases;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream ls(line);
        std::string tag;
        ls >> tag;
        if (tag == "case") {
            cases.emplace_back();
            ls >> cases.back().name;
            continue;
        }
        if (cases.empty()) continue;
        GoldenCase& c = cases.back();
        if (tag == "kind") {
            ls >> c.kind;
        } else if (tag == "opt") {
            int bidir = 0;
            ls >> c.input_size >> c.hidden_size >> c.num_layers >> bidir;
            c.bidirectional = bidir != 0;
        } else if (tag == "state") {
            std::string key;
            ls >> key;
            c.state.emplace_back(key, readTensor(ls));
        } else if (tag == "x") {
            c.x = readTensor(ls);
        } else if (tag == "lengths") {
            c.lengths = readTensor(ls);
        } else if (tag == "gout") {
            int k = 0;
            ls >> k;
            c.gouts.push_back(readTensor(ls));
        } else if (tag == "norms") {
            int64_t layer = 0;
            int direction = 0;
            ls >> layer >> direction;
            c.norms[{layer, direction}] = readTensor(ls).values;
        }
    }
    return cases;
}

Tensor toTensor(const GoldenTensor& t, DType dtype) {
    return from_vector(t.values, t.shape).to(dtype);
}

std::shared_ptr<nn::RNNBase> makeLayer(const GoldenCase& c, DType dtype) {
    nn::RecurrentOptions o;
    o.num_layers = c.num_layers;
    o.bidirectional = c.bidirectional;
    std::shared_ptr<nn::RNNBase> m;
    if (c.kind == "LSTM")
        m = std::make_shared<nn::LSTM>(c.input_size, c.hidden_size, o);
    else if (c.kind == "GRU")
        m = std::make_shared<nn::GRU>(c.input_size, c.hidden_size, o);
    else
        m = std::make_shared<nn::RNN>(c.input_size, c.hidden_size, o);
    m->to(dtype);
    nn::StateDict state;
    for (const auto& [key, t] : c.state)
        state.emplace_back(key, toTensor(t, dtype));
    m->load_state_dict(state);
    return m;
}

// The golden case's loss, sum over outputs k of sum(output_k * gout_k), backward; what the
// recorder (when given) got.
std::vector<nn::RecurrentStepGradients>
runCase(const GoldenCase& c, DType dtype,
        std::shared_ptr<nn::RecurrentGradientRecorder> recorder = nullptr) {
    auto layer = makeLayer(c, dtype);
    const Tensor x = toTensor(c.x, dtype);
    std::vector<int64_t> lens;
    for (double v : c.lengths.values)
        lens.push_back(int64_t(v));
    const Tensor lengths = from_vector(lens, Dims{int64_t(lens.size())});
    TensorList outs;
    {
        std::optional<nn::RecordRecurrentGradients> scope;
        if (recorder) scope.emplace(recorder, "rnn");
        outs = layer->outputs({x, lengths});
    }
    Tensor loss;
    for (size_t k = 0; k < outs.size(); ++k) {
        const Tensor term = (outs[k] * toTensor(c.gouts[k], dtype)).sum();
        loss = k == 0 ? term : loss + term;
    }
    loss.backward();
    return recorder ? recorder->take() : std::vector<nn::RecurrentStepGradients>{};
}

std::vector<std::vector<float>> parameterGrads(nn::Module& m) {
    std::vector<std::vector<float>> out;
    for (const Tensor& p : m.parameters()) {
        const Tensor g = p.grad().to(DType::Float32).contiguous();
        out.emplace_back(g.data<float>(), g.data<float>() + g.numel());
    }
    return out;
}

// The word-language LSTM example on two tiny word lists: a few steps, the probe every step.
io::Project wordLanguageProject(const std::string& dir, int64_t probe_every) {
    auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream(dir + "/" + name) << text;
    };
    write("a", "apple\nbanana\ncherry\ndate\nelder\nfig\ngrape\nhoney\nkiwi\nlemon\nmango\n");
    write("b", "zzyzx\nqwop\nxyzzy\nplugh\nfrotz\ngnusto\nrezrov\nyomin\nblorb\nwazzo\nkrebf\n");
    std::ifstream in(MYELIN_SOURCE_DIR "/resources/examples/word_language_lstm.myelin");
    std::stringstream text;
    text << in.rdbuf();
    std::string json = text.str();
    auto replace = [&](const std::string& from, const std::string& to) {
        const size_t at = json.find(from);
        QVERIFY2(at != std::string::npos, from.c_str());
        json.replace(at, from.size(), to);
    };
    const size_t classes = json.find("\"classes\": \"");
    const size_t end = json.find('"', classes + 12);
    json.replace(classes, end + 1 - classes, "\"classes\": \"A=a, B=b\"");
    replace("\"batch_size\": 64", "\"batch_size\": 4");
    replace("\"feature_maps_every\": 500",
            "\"feature_maps_every\": " + std::to_string(probe_every));
    replace("\"summaries_every\": 100", "\"summaries_every\": 0");
    replace("\"out_features\": 8", "\"out_features\": 2");
    return io::parse_project(json);
}

train::TrainerOptions shortRun(const std::string& dir, const std::string& sub) {
    train::TrainerOptions o;
    o.project_dir = dir;
    o.checkpoint_dir = dir + "/" + sub;
    o.max_steps = 3;
    o.threads = 1;
    return o;
}

} // namespace

class TestTimeGradients : public QObject {
    Q_OBJECT

  private slots:
    void matchesPyTorch_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("dtype");
        QTest::newRow("f32") << "time_grads_f32.txt" << int(DType::Float32);
        QTest::newRow("f64") << "time_grads_f64.txt" << int(DType::Float64);
    }

    void matchesPyTorch() {
        QFETCH(QString, file);
        QFETCH(int, dtype);
        const DType dt = DType(dtype);
        const auto cases = readGolden(file.toStdString());
        QCOMPARE(cases.size(), size_t(4));
        const double rtol = dt == DType::Float32 ? 1e-5 : 1e-10;
        for (const GoldenCase& c : cases) {
            auto recorder = std::make_shared<nn::RecurrentGradientRecorder>();
            const auto got = runCase(c, dt, recorder);
            QCOMPARE(got.size(), c.norms.size());
            for (const nn::RecurrentStepGradients& g : got) {
                QCOMPARE(g.label, std::string("rnn"));
                const auto it = c.norms.find({g.layer, g.direction});
                QVERIFY2(it != c.norms.end(), c.name.c_str());
                QCOMPARE(g.norms.size(), it->second.size());
                for (size_t t = 0; t < g.norms.size(); ++t) {
                    const double want = it->second[t];
                    QVERIFY2(std::abs(g.norms[t] - want) <= rtol * std::abs(want) + 1e-12,
                             qPrintable(QString("%1 layer %2 direction %3 step %4: %5 vs %6")
                                            .arg(QString::fromStdString(c.name))
                                            .arg(g.layer)
                                            .arg(g.direction)
                                            .arg(t)
                                            .arg(g.norms[t], 0, 'g', 12)
                                            .arg(want, 0, 'g', 12)));
                }
            }
        }
    }

    void recordingChangesNothing() {
        const auto cases = readGolden("time_grads_f32.txt");
        for (const GoldenCase& c : cases) {
            auto plain = makeLayer(c, DType::Float32);
            auto recorded = makeLayer(c, DType::Float32);
            auto run = [&](nn::RNNBase& layer, bool record) {
                auto recorder = std::make_shared<nn::RecurrentGradientRecorder>();
                std::optional<nn::RecordRecurrentGradients> scope;
                if (record) scope.emplace(recorder, "rnn");
                std::vector<int64_t> lens;
                for (double v : c.lengths.values)
                    lens.push_back(int64_t(v));
                const TensorList outs = layer.outputs(
                    {toTensor(c.x, DType::Float32), from_vector(lens, Dims{int64_t(lens.size())})});
                scope.reset();
                (outs[0] * toTensor(c.gouts[0], DType::Float32)).sum().backward();
                return recorder->take().size();
            };
            QCOMPARE(run(*plain, false), size_t(0));
            QVERIFY(run(*recorded, true) > 0);
            QCOMPARE(parameterGrads(*plain), parameterGrads(*recorded)); // bit for bit
        }
        // No scope on this thread: nothing installed; scopes nest.
        QVERIFY(nn::RecordRecurrentGradients::current() == nullptr);
        auto outer = std::make_shared<nn::RecurrentGradientRecorder>();
        {
            nn::RecordRecurrentGradients a(outer, "outer");
            {
                nn::RecordRecurrentGradients b(outer, "inner");
                QCOMPARE(nn::RecordRecurrentGradients::current()->label, std::string("inner"));
            }
            QCOMPARE(nn::RecordRecurrentGradients::current()->label, std::string("outer"));
        }
        QVERIFY(nn::RecordRecurrentGradients::current() == nullptr);
    }

    void storeRoundTrip() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("runs.sqlite").toStdString();
        int64_t run = 0;
        {
            store::RunStore s = store::RunStore::open(path);
            run = s.create_run({.name = "lstm"});
            QVERIFY(s.time_gradient_layers(run).empty());
            QVERIFY(s.time_gradients(run, "lstm", 0).empty());
            s.log_time_gradients(run, {"rnn2", 10, 0, 0, 0, {1.0, 0.5, 0.25}});
            s.log_time_gradients(run, {"rnn2", 10, 0, 1, 0, {0.1, 0.2, 0.3}});
            s.log_time_gradients(run, {"rnn1", 10, 1, 0, 0, {7.0}});
            s.log_time_gradients(run, {"rnn2", 20, 0, 0, 0, {2.0, 1e-30, 0.0}});
            s.log_time_gradients(run, {"rnn2", 20, 0, 0, 0, {3.0, 1e-30, 0.0}}); // replaces
            QCOMPARE(s.time_gradient_layers(run), (std::vector<std::string>{"rnn2", "rnn1"}));
            QCOMPARE(s.time_gradient_steps(run, "rnn2"), (std::vector<int64_t>{10, 20}));
            const auto at10 = s.time_gradients(run, "rnn2", 14); // nearest: 10
            QCOMPARE(at10.size(), size_t(2));
            QCOMPARE(at10[0].step, int64_t(10));
            QCOMPARE(at10[0].direction, 0);
            QCOMPARE(at10[1].direction, 1);
            QCOMPARE(at10[1].norms, (std::vector<double>{0.1, 0.2, 0.3}));
            const auto at20 = s.time_gradients(run, "rnn2", 16); // nearest: 20
            QCOMPARE(at20.size(), size_t(1));
            QCOMPARE(at20[0].norms, (std::vector<double>{3.0, 1e-30, 0.0}));
            QCOMPARE(s.time_gradients(run, "rnn2", 15)[0].step, int64_t(10)); // tie: earlier
            QCOMPARE(s.time_gradients(run, "rnn1", 99)[0].stack_layer, int64_t(1));
            // Bad input names what is wrong and writes nothing.
            CHECK_ERROR(store::StoreError, s.log_time_gradients(run, {"", 1, 0, 0, 0, {1.0}}),
                        "needs a layer name");
            CHECK_ERROR(store::StoreError, s.log_time_gradients(run, {"x", -1, 0, 0, 0, {1.0}}),
                        "step", "out of range");
            CHECK_ERROR(store::StoreError, s.log_time_gradients(run, {"x", 1, 0, 2, 0, {1.0}}),
                        "direction 2");
            CHECK_ERROR(store::StoreError, s.log_time_gradients(run, {"x", 1, 0, 0, 0, {}}),
                        "time steps, got 0");
            CHECK_ERROR(store::StoreError, s.log_time_gradients(run + 7, {"x", 1, 0, 0, 0, {1.0}}),
                        "no run with id");
            QCOMPARE(s.time_gradient_layers(run).size(), size_t(2));
            s.finish_run(run, store::RunStatus::Finished);
        }
        {
            // What a store written by version 4 looks like: no time_gradients table.
            sqlite3* db = nullptr;
            QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
            QCOMPARE(sqlite3_exec(db, "DROP TABLE time_gradients; PRAGMA user_version = 4", nullptr,
                                  nullptr, nullptr),
                     SQLITE_OK);
            sqlite3_close(db);
        }
        store::RunStore migrated = store::RunStore::open(path);
        QCOMPARE(migrated.run(run).name, std::string("lstm"));
        QVERIFY(migrated.time_gradient_layers(run).empty());
        migrated.log_time_gradients(run, {"rnn2", 5, 0, 0, 0, {1.0, 2.0}});
        QCOMPARE(migrated.time_gradient_steps(run, "rnn2"), std::vector<int64_t>{5});
        migrated.delete_run(run);
        QVERIFY(migrated.time_gradient_layers(run).empty()); // deleted with the run
    }

    void trainerReportsAndStores() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        train::Trainer trainer(wordLanguageProject(d, 1), shortRun(d, "probe"));
        std::vector<train::TimeGradientEvent> events;
        std::vector<double> losses;
        store::RunStore s = store::RunStore::open(d + "/runs.sqlite");
        const int64_t run = s.create_run({.name = "word language"});
        train::StoreSink sink(s, run);
        train::CallbackSink collect([&](const train::Event& e) {
            if (auto* g = e.get<train::TimeGradientEvent>()) events.push_back(*g);
            if (auto* m = e.get<train::StepMetrics>()) losses.push_back(m->loss);
            sink.on_event(e);
        });
        trainer.set_sink(&collect);
        const train::TrainResult result = trainer.run();
        QVERIFY2(result.status == train::RunStatus::Finished ||
                     result.status == train::RunStatus::Stopped,
                 result.error.c_str());
        QCOMPARE(losses.size(), size_t(3));
        // Three probe steps, the bidirectional LSTM's two directions each.
        QCOMPARE(events.size(), size_t(6));
        for (const auto& e : events) {
            QCOMPARE(e.layer, std::string("2"));
            QCOMPARE(e.norms.size(), size_t(24)); // max_length
            QVERIFY(e.norms[0] > 0);
            QCOMPARE(e.norms[23], 0.0); // every probe word is shorter than 24 characters
        }
        QCOMPARE(events[0].direction, 0);
        QCOMPARE(events[1].direction, 1);
        QCOMPARE(events[4].step, int64_t(3));
        s.flush();
        QCOMPARE(s.time_gradient_layers(run), std::vector<std::string>{"2"});
        QCOMPARE(s.time_gradient_steps(run, "2"), (std::vector<int64_t>{1, 2, 3}));
        QCOMPARE(s.time_gradients(run, "2", 2)[1].norms, events[3].norms);

        // The same run without the probe: the losses are bit-identical.
        train::Trainer plain(wordLanguageProject(d, 0), shortRun(d, "plain"));
        std::vector<double> plain_losses;
        size_t plain_events = 0;
        train::CallbackSink count([&](const train::Event& e) {
            if (e.get<train::TimeGradientEvent>()) ++plain_events;
            if (auto* m = e.get<train::StepMetrics>()) plain_losses.push_back(m->loss);
        });
        plain.set_sink(&count);
        plain.run();
        QCOMPARE(plain_events, size_t(0));
        QCOMPARE(plain_losses, losses);
    }
};

QTEST_GUILESS_MAIN(TestTimeGradients)
#include "test_time_gradients.moc"
