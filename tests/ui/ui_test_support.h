#pragma once
// Helpers every studio test uses: where screenshots go, saving one, and finding the examples.
#include <myelin/graph/model_spec.h>

#include <QDir>
#include <QPixmap>
#include <QSettings>
#include <QStandardPaths>
#include <QString>
#include <QTemporaryDir>
#include <QWidget>
#include <QtTest>

namespace myelin::test {

// MYELIN_TEST_ARTIFACTS (ctest sets it to <build>/test-artifacts), else a temporary folder.
inline QString artifactsDir() {
    QString dir = qEnvironmentVariable("MYELIN_TEST_ARTIFACTS");
    if (dir.isEmpty()) dir = QDir::temp().filePath(QStringLiteral("myelin-test-artifacts"));
    QDir().mkpath(dir);
    return dir;
}

// Keeps the settings, recent files and autosaves of a test in `home` (a temporary folder),
// away from the person's own and from other tests'.
inline void isolateStudioSettings(const QTemporaryDir& home) {
    QVERIFY(home.isValid());
    qputenv("XDG_CONFIG_HOME", home.filePath(QStringLiteral("config")).toUtf8());
    qputenv("XDG_DATA_HOME", home.filePath(QStringLiteral("data")).toUtf8());
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();
}

// The widget as QWidget::grab() paints it, saved as `fileName` in artifactsDir().
inline void saveScreenshot(QWidget& widget, const QString& fileName) {
    const QString path = QDir(artifactsDir()).filePath(fileName);
    const QPixmap shot = widget.grab();
    QVERIFY(!shot.isNull());
    QVERIFY2(shot.save(path), qPrintable(QStringLiteral("cannot write ") + path));
    qInfo("screenshot: %s", qPrintable(path));
}

// The source tree: MYELIN_SOURCE_DIR (ctest sets it), else where this build was configured from.
inline QString sourceDir() {
    const QString dir = qEnvironmentVariable("MYELIN_SOURCE_DIR");
    return QDir::cleanPath(dir.isEmpty() ? QStringLiteral(MYELIN_TEST_SOURCE_DIR) : dir);
}

// resources/examples/<name>.myelin
inline QString examplePath(const char* name) {
    return QDir(sourceDir())
        .filePath(QStringLiteral("resources/examples/%1.myelin").arg(QLatin1String(name)));
}

// The id of the first node of `kind`, -1 when there is none.
inline graph::NodeId nodeOfKind(const graph::ModelSpec& spec, const std::string& kind) {
    for (const auto& n : spec.nodes)
        if (n.kind == kind) return n.id;
    return -1;
}

} // namespace myelin::test
