// myelin-studio: the desktop studio.
//
//   myelin-studio [PROJECT.myelin]
//
// Environment: MYELIN_EXAMPLES_DIR names the folder of the example projects that File > New
// offers when they are not next to the executable (see new_project_dialog.h for the lookup).
// MYELIN_STARTUP_PROBE=1 prints how long the start took (main() to the first painted frame of
// the window with its project) and quits: docs/performance.md measures start-up with it.
#include "shell/main_window.h"
#include "widgets/theme.h"

#include <myelin/plugin/loader.h>
#include <myelin/version.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QMessageBox>
#include <QStringList>
#include <QTimer>

#include <cstdio>

int main(int argc, char** argv) {
    QElapsedTimer sinceStart;
    sinceStart.start();
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Myelin Studio"));
    QApplication::setApplicationVersion(QString::fromLatin1(myelin::version()));
    QApplication::setOrganizationName(QStringLiteral("Myelin"));
    QApplication::setOrganizationDomain(QStringLiteral("myelin.io"));
    QApplication::setDesktopFileName(QStringLiteral("myelin-studio"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Myelin Studio: build and train neural networks.\n\n"
        "Environment:\n"
        "  MYELIN_EXAMPLES_DIR  folder of the example projects offered by File > New\n"
        "  MYELIN_PLUGIN_PATH   ':'-separated folders of plugins to load (before\n"
        "                       ~/.local/share/myelin/plugins and the install's)"));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("project"),
                                 QStringLiteral("Project file (*.myelin) to open."),
                                 QStringLiteral("[project]"));
    parser.process(app);

    const QStringList positional = parser.positionalArguments();
    if (positional.size() > 1) {
        std::fprintf(stderr, "myelin-studio: expected at most one project file, got %lld\n",
                     static_cast<long long>(positional.size()));
        return 2;
    }

    // Plugins before the window: the palette and the pages list their kinds. A refused plugin
    // is reported once the window is up; the studio runs without it.
    const myelin::plugin::LoadReport plugins = myelin::plugin::load_plugins();
    for (const auto& problem : plugins.problems)
        std::fprintf(stderr, "myelin-studio: warning: %s\n", problem.message.c_str());

    myelin::ui::applyStudioTheme(app);
    myelin::ui::MainWindow window(positional.isEmpty() ? QString() : positional.first());
    window.show();
    if (qEnvironmentVariableIntValue("MYELIN_STARTUP_PROBE") == 1) {
        // Paint now, so the time includes the first frame, then report and quit.
        window.repaint();
        QApplication::processEvents();
        std::printf("startup: %lld ms from main() to the first painted frame\n",
                    static_cast<long long>(sinceStart.elapsed()));
        return 0;
    }
    // Autosaved changes of a session that did not end properly, once the window is up.
    QTimer::singleShot(0, &window, [&window] { window.offerRecovery(); });
    if (!plugins.problems.empty())
        QTimer::singleShot(0, &window, [&window, problems = plugins.problems] {
            QStringList lines;
            for (const auto& problem : problems)
                lines << QString::fromStdString(problem.message);
            QMessageBox box(QMessageBox::Warning, QObject::tr("Plugins not loaded"),
                            QObject::tr("%n plugin(s) could not be loaded; the studio runs "
                                        "without them.",
                                        nullptr, int(problems.size())),
                            QMessageBox::Ok, &window);
            box.setDetailedText(lines.join(QStringLiteral("\n\n")));
            box.exec();
        });
    return QApplication::exec();
}
