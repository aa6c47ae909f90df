// The Data page with a text source, offscreen: a small text-lines source (files written here)
// previews its tokenised examples per class, the vocabulary size, <unk> on validation and the
// histogram of tokens per example; the source's options are editable and a missing file is
// named in place. With Debian's word lists installed, the word-language example is shown too
// and its screenshot saved (data_text.png).
#include "document/project_document.h"
#include "pages/data_page.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/io/project.h>

#include <qcustomplot.h>

#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableWidget>
#include <QTextDocumentFragment>
#include <QtTest>

#include <memory>

using myelin::ui::DataPage;
using myelin::ui::ProjectDocument;

namespace {

constexpr int kPreviewTimeoutMs = 120000;

QString plain(const QLabel* label) {
    return QTextDocumentFragment::fromHtml(label->text()).toPlainText();
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

// Three small "languages" and a project reading them as characters.
QString writeTextProject(const QTemporaryDir& dir) {
    writeFile(dir.filePath("en.txt"), "house\ngarden\nwater\nsun\nmoon\nstreet\nwindow\ntree\n"
                                      "river\nbread\nmilk\nhorse\n");
    writeFile(dir.filePath("de.txt"), "Haus\nGarten\nWasser\nSonne\nMond\nStraße\nFenster\n"
                                      "Baum\nFluss\nBrot\nMilch\nPferd\n");
    writeFile(dir.filePath("sv.txt"), "hus\ntr\xC3\xA4\x64g\xC3\xA5rd\nvatten\nsol\nm\xC3\xA5ne\n"
                                      "gata\nf\xC3\xB6nster\ntr\xC3\xA4\nflod\nbr\xC3\xB6\x64\n"
                                      "mj\xC3\xB6lk\nh\xC3\xA4st\n\xFF\xFE\n");
    const QString path = dir.filePath("text.myelin");
    writeFile(path, R"({"format_version": 1, "name": "Text", "model": {"nodes": [], "edges": []},
        "data": {"source": {"kind": "text-lines",
                            "classes": "English=en.txt, German=de.txt, Swedish=sv.txt",
                            "lowercase": true, "max_length": 6, "test_fraction": 0.1},
                 "validation_fraction": 0.2, "num_workers": 0},
        "training": {"loss": {"kind": "CrossEntropyLoss"}, "optimizer": {"kind": "Adam"},
                     "seed": 2}})");
    return path;
}

struct Fixture {
    ProjectDocument doc;
    std::unique_ptr<DataPage> page;
    explicit Fixture(const QString& path) {
        doc.open(myelin::io::load_project(path.toStdString()), path);
        page = std::make_unique<DataPage>(&doc);
        page->resize(1280, 800);
        page->show();
    }
    template <typename T> T* find(const char* name) {
        return page->findChild<T*>(QLatin1String(name));
    }
    QCPBars* lengthBars() {
        auto* chart = find<QCustomPlot>("dataLengthChart");
        if (chart == nullptr || chart->plottableCount() != 1) return nullptr;
        return qobject_cast<QCPBars*>(chart->plottable(0));
    }
};

} // namespace

class TestDataPageText : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() {
        QVERIFY(home_.isValid());
        myelin::test::isolateStudioSettings(home_);
        myelin::ui::applyStudioTheme(*qApp);
    }

    void smallTextSourcePreview() {
        QTemporaryDir dir;
        Fixture f(writeTextProject(dir));
        QVERIFY(QTest::qWaitForWindowExposed(f.page.get()));
        QVERIFY2(f.page->waitForPreview(kPreviewTimeoutMs), qPrintable(f.page->previewError()));
        QCOMPARE(f.find<QComboBox>("dataSource")->currentText(), QStringLiteral("text-lines"));

        // 36 examples: 4 test, 6 validation, 26 training; ids int64 [6].
        const QString summary = plain(f.find<QLabel>("dataSummary"));
        QVERIFY2(summary.contains("26 training") && summary.contains("6 validation") &&
                     summary.contains("4 test"),
                 qPrintable(summary));
        QVERIFY2(summary.contains("[6] int64"), qPrintable(summary));
        QVERIFY2(summary.contains("3 classes"), qPrintable(summary));

        auto* stats = f.find<QLabel>("dataTextStats");
        QVERIFY(stats->isVisible());
        const QString facts = plain(stats);
        QVERIFY2(facts.contains(QRegularExpression("Vocabulary \\d+ char tokens")),
                 qPrintable(facts));
        QVERIFY2(facts.contains("6 ids per example"), qPrintable(facts));
        QVERIFY2(facts.contains(QRegularExpression("<unk> on validation \\d+\\.\\d\\d %")),
                 qPrintable(facts));
        // The bad line of sv.txt is named.
        QVERIFY2(facts.contains("sv.txt line 13: not valid UTF-8"), qPrintable(facts));

        // Tokenised examples: class, text, tokens, ids, at most 3 per class.
        auto* table = f.find<QTableWidget>("dataPreviewTable");
        QVERIFY(table->isVisible());
        QCOMPARE(table->columnCount(), 4);
        QCOMPARE(table->rowCount(), 9);
        bool sawSwedish = false;
        for (int r = 0; r < table->rowCount(); ++r) {
            const QString text = table->item(r, 1)->text();
            const QString tokens = table->item(r, 2)->text();
            QCOMPARE(text, text.toLower()); // lowercase: true
            QCOMPARE(tokens.split(QStringLiteral(" · ")).size(), std::min<int>(text.size(), 6));
            QVERIFY2(!table->item(r, 3)->text().isEmpty(), qPrintable(text));
            sawSwedish |= table->item(r, 0)->text() == QStringLiteral("Swedish");
        }
        QVERIFY(sawSwedish);

        // Lengths of the 26 training examples, the cut at max_length marked.
        QCPBars* bars = f.lengthBars();
        QVERIFY(bars != nullptr);
        double total = 0;
        for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
            total += it->value;
        QCOMPARE(total, 26.0);
        QVERIFY(f.find<QCustomPlot>("dataLengthChart")->isVisible());
        QCOMPARE(f.find<QCustomPlot>("dataLengthChart")->itemCount(), 2);
        myelin::test::saveScreenshot(*f.page, QStringLiteral("data_text_small.png"));

        // An option edit reloads: word tokens, a longer max_length.
        auto* maxLength = qobject_cast<QSpinBox*>(f.page->sourceOptionEditor("max_length"));
        QVERIFY(maxLength != nullptr);
        maxLength->setValue(9);
        QVERIFY(f.page->waitForPreview(kPreviewTimeoutMs));
        QCOMPARE(f.doc.project().data.source.options.get_int("max_length"), int64_t(9));
        QVERIFY2(plain(f.find<QLabel>("dataTextStats")).contains("9 ids per example"),
                 qPrintable(plain(f.find<QLabel>("dataTextStats"))));
    }

    void missingClassFileIsNamed() {
        QTemporaryDir dir;
        const QString path = writeTextProject(dir);
        QFile::remove(dir.filePath("de.txt"));
        Fixture f(path);
        QVERIFY(!f.page->waitForPreview(kPreviewTimeoutMs));
        QVERIFY2(f.page->previewError().contains(dir.filePath("de.txt")),
                 qPrintable(f.page->previewError()));
        QVERIFY(!f.find<QLabel>("dataTextStats")->isVisible());
        QVERIFY(!f.find<QCustomPlot>("dataLengthChart")->isVisible());
    }

    void wordLanguageExample() {
        if (!QFile::exists("/usr/share/dict/ngerman") || !QFile::exists("/usr/share/dict/swedish"))
            QSKIP("Debian's word lists are not installed (wngerman, wswedish, ...)");
        Fixture f(myelin::test::examplePath("word_language"));
        QVERIFY(QTest::qWaitForWindowExposed(f.page.get()));
        QVERIFY2(f.page->waitForPreview(kPreviewTimeoutMs), qPrintable(f.page->previewError()));
        QVERIFY2(plain(f.find<QLabel>("dataSummary")).contains("8 classes"),
                 qPrintable(plain(f.find<QLabel>("dataSummary"))));
        QCOMPARE(f.find<QTableWidget>("dataPreviewTable")->rowCount(), 24);
        QVERIFY(f.lengthBars() != nullptr);
        myelin::test::saveScreenshot(*f.page, QStringLiteral("data_text.png"));
    }

  private:
    QTemporaryDir home_;
};

QTEST_MAIN(TestDataPageText)
#include "test_data_page_text.moc"
