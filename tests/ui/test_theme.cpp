// The studio's colours come from one table (ui/widgets/theme.h) and its look from one style sheet
// generated from it (issue 12, "ui in rooms"): no file under ui/ other than ui/widgets/theme*
// holds a colour literal, the sheet has every placeholder filled in, it is the application's,
// and no widget sets a sheet of its own.
#include "shell/main_window.h"
#include "shell/new_project_dialog.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <QDirIterator>
#include <QFile>
#include <QRegularExpression>
#include <QtTest>

namespace {

// Files that may still hold colour literals (none: every room is converted).
const QStringList kNotYetConverted = {};

bool isTheme(const QString& path) {
    return path.startsWith(QStringLiteral("ui/widgets/theme"));
}

bool notYetConverted(const QString& path) {
    for (const QString& prefix : kNotYetConverted)
        if (path.startsWith(prefix)) return true;
    return false;
}

// A source file split into code (comments and literals blanked) and the text of its string
// literals (everything else blanked), both keeping the line breaks so that offsets map to
// lines. Handles // and /* */ comments, "..." with escapes, '...', and raw strings R"x(...)x".
struct Split {
    QString code;
    QString strings;
};

Split splitSource(const QString& text) {
    Split out{text, text};
    auto blank = [](QString& s, qsizetype from, qsizetype to) {
        for (qsizetype i = from; i < to; ++i)
            if (s[i] != QLatin1Char('\n')) s[i] = QLatin1Char(' ');
    };
    qsizetype codeFrom = 0; // start of the current code run, blanked in `strings` at its end
    qsizetype i = 0;
    const qsizetype n = text.size();
    while (i < n) {
        const QChar c = text[i];
        const QChar next = i + 1 < n ? text[i + 1] : QChar();
        if (c == QLatin1Char('/') && next == QLatin1Char('/')) { // line comment
            const qsizetype end = text.indexOf(QLatin1Char('\n'), i);
            const qsizetype stop = end < 0 ? n : end;
            blank(out.code, i, stop);
            blank(out.strings, i, stop);
            i = stop;
        } else if (c == QLatin1Char('/') && next == QLatin1Char('*')) { // block comment
            const qsizetype end = text.indexOf(QStringLiteral("*/"), i + 2);
            const qsizetype stop = end < 0 ? n : end + 2;
            blank(out.code, i, stop);
            blank(out.strings, i, stop);
            i = stop;
        } else if (c == QLatin1Char('R') && next == QLatin1Char('"') &&
                   (i == 0 || !(text[i - 1].isLetterOrNumber() || text[i - 1] == '_'))) {
            const qsizetype open = text.indexOf(QLatin1Char('('), i + 2);
            if (open < 0) break;
            const QString close = QLatin1Char(')') + text.mid(i + 2, open - i - 2) + '"';
            const qsizetype end = text.indexOf(close, open + 1);
            const qsizetype stop = end < 0 ? n : end + close.size();
            blank(out.strings, codeFrom, open + 1);
            blank(out.code, open + 1, stop);
            codeFrom = end < 0 ? n : end;
            i = stop;
        } else if (c == QLatin1Char('"') || c == QLatin1Char('\'')) {
            qsizetype j = i + 1;
            while (j < n && text[j] != c && text[j] != QLatin1Char('\n'))
                j += text[j] == QLatin1Char('\\') ? 2 : 1;
            const qsizetype stop = std::min(j + 1, n);
            blank(out.strings, codeFrom, i + 1);
            blank(out.code, i + 1, std::max(i + 1, stop - 1));
            codeFrom = stop - 1;
            i = stop;
        } else {
            ++i;
        }
    }
    blank(out.strings, codeFrom, n);
    return out;
}

// The colour literals in one file, as "path:line: text".
QStringList colourLiterals(const QString& path, const QString& text) {
    // In strings: #rgb, #rrggbb, #aarrggbb, rgb(...), rgba(...).
    static const QRegularExpression inStrings(
        QStringLiteral("#(?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{3})(?![0-9A-Za-z_-])|"
                       "\\brgba?\\s*\\(\\s*[0-9]"));
    // In code: QColor constructed from numbers (QColor(47, 98, 150), QColor c{0x2F, ...},
    // QColor::fromRgb(...), qRgb(...)), and Qt's named colours.
    static const QRegularExpression inCode(QStringLiteral(
        "\\bQColor\\s*(?:[A-Za-z_]\\w*\\s*)?[({]\\s*[-+]?(?:0[xX][0-9A-Fa-f]+|[0-9.]+)|"
        "\\bQColor::from\\w+\\s*\\(\\s*[-+]?[0-9.]|"
        "\\bqRgba?\\s*\\(\\s*[0-9]|"
        "\\bQt::(?:white|black|red|darkRed|green|darkGreen|blue|darkBlue|cyan|darkCyan|magenta|"
        "darkMagenta|yellow|darkYellow|gray|darkGray|lightGray|color0|color1)\\b"));
    const Split split = splitSource(text);
    QStringList found;
    for (const auto& [source, pattern] :
         {std::pair{&split.strings, &inStrings}, std::pair{&split.code, &inCode}}) {
        for (auto it = pattern->globalMatch(*source); it.hasNext();) {
            const QRegularExpressionMatch match = it.next();
            const qsizetype at = match.capturedStart();
            const qsizetype lineStart = text.lastIndexOf(QLatin1Char('\n'), at) + 1;
            qsizetype lineEnd = text.indexOf(QLatin1Char('\n'), at);
            if (lineEnd < 0) lineEnd = text.size();
            found << QStringLiteral("%1:%2: %3")
                         .arg(path)
                         .arg(text.left(at).count(QLatin1Char('\n')) + 1)
                         .arg(text.mid(lineStart, lineEnd - lineStart).trimmed());
        }
    }
    return found;
}

} // namespace

class TestTheme : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("MyelinTest"));
        QCoreApplication::setApplicationName(QStringLiteral("test_theme"));
        QSettings().clear();
        myelin::ui::applyStudioTheme(*qApp);
    }

    // The scanner itself: what counts as a literal and what does not.
    void scannerFindsLiterals() {
        const auto count = [](const char* text) {
            return colourLiterals(QStringLiteral("x.cpp"), QString::fromUtf8(text)).size();
        };
        QCOMPARE(count("auto s = QStringLiteral(\"color: #2F6296;\");"), 1);
        QCOMPARE(count("const char* k = R\"(\nQLabel { color: #fff; }\n)\";"), 1);
        QCOMPARE(count("s = \"background: rgba(255, 255, 255, 0.5)\";"), 1);
        QCOMPARE(count("painter->setBrush(QColor(255, 255, 255, 235));"), 1);
        QCOMPARE(count("const QColor kTrain{0x2F, 0x62, 0x96};"), 1);
        QCOMPARE(count("QColor c = QColor::fromRgb(10, 20, 30);"), 1);
        QCOMPARE(count("painter.setPen(Qt::white);"), 1);
        QCOMPARE(count("#include \"widgets/theme.h\"\n#define X 1"), 0);
        QCOMPARE(count("// QColor(1, 2, 3) and \"#123456\" in a comment"), 0);
        QCOMPARE(count("label->setObjectName(QStringLiteral(\"#dataPage\"));"), 0);
        QCOMPARE(count("QColor fill = colors::kAccent; fill.setAlpha(45);"), 0);
        QCOMPARE(count("QColor::fromHsl(hue, base.hslSaturation(), lightness);"), 0);
        QCOMPARE(count("pixmap.fill(Qt::transparent);"), 0);
        QCOMPARE(count("auto s = QStringLiteral(\"%1 \\\" #abc\").arg(x);"), 1);
    }

    void noColourLiterals() {
        const QDir source(myelin::test::sourceDir());
        QStringList violations, skipped;
        int files = 0;
        QDirIterator it(source.filePath(QStringLiteral("ui")), {"*.h", "*.cpp"}, QDir::Files,
                        QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString path = source.relativeFilePath(it.next());
            if (isTheme(path)) continue;
            QFile file(source.filePath(path));
            QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(path));
            const QStringList found = colourLiterals(path, QString::fromUtf8(file.readAll()));
            ++files;
            if (notYetConverted(path)) {
                if (!found.isEmpty())
                    skipped << QStringLiteral("%1 (%2)").arg(path).arg(found.size());
                continue;
            }
            violations << found;
        }
        QVERIFY(files > 40);
        skipped.sort();
        qInfo("not converted yet, skipped: %s", qPrintable(skipped.join(QStringLiteral(", "))));
        for (const QString& violation : violations) // in full: QVERIFY2 shortens its message
            qWarning("%s", qPrintable(violation));
        QVERIFY2(violations.isEmpty(),
                 qPrintable(QStringLiteral("%1 colour literals outside ui/widgets/theme* (listed "
                                           "above): name the colour in theme.h's table, style "
                                           "through studioStyleSheet()")
                                .arg(violations.size())));
    }

    void sheetIsGeneratedFromTheTable() {
        const QString sheet = myelin::ui::studioStyleSheet();
        QVERIFY2(!sheet.contains(QLatin1Char('@')),
                 qPrintable(QStringLiteral("a placeholder names no colour of the table: ") +
                            sheet.mid(sheet.indexOf(QLatin1Char('@')), 40)));
        QCOMPARE(qApp->styleSheet(), sheet);
        for (const QColor& colour : {myelin::ui::colors::kSurface, myelin::ui::colors::kAccent,
                                     myelin::ui::colors::kFaintText})
            QVERIFY2(sheet.contains(colour.name()), qPrintable(colour.name()));
        QVERIFY(sheet.contains(QStringLiteral("#layerPalette QTreeWidget")));
    }

    // Every widget of the studio with a project open, and the New Project dialog, takes its look
    // from the application's sheet.
    void noWidgetSetsItsOwnSheet() {
        myelin::ui::MainWindow window;
        window.resize(1280, 800);
        window.show();
        QVERIFY(window.openProject(myelin::test::examplePath("fashion_cnn")));
        QTest::qWait(50);
        myelin::ui::NewProjectDialog dialog(&window);
        dialog.show();
        QStringList own;
        int widgets = 0;
        for (QWidget* widget : window.findChildren<QWidget*>()) {
            ++widgets;
            if (!widget->styleSheet().isEmpty())
                own << QStringLiteral("%1 \"%2\"")
                           .arg(QString::fromLatin1(widget->metaObject()->className()),
                                widget->objectName());
        }
        QVERIFY(widgets > 200);
        QVERIFY2(own.isEmpty(), qPrintable(own.join('\n')));
        for (const char* page : {"dataPage", "trainingPage"}) // the pages are among them
            QVERIFY2(window.findChild<QWidget*>(QLatin1String(page)) != nullptr, page);
    }
};

QTEST_MAIN(TestTheme)
#include "test_theme.moc"
