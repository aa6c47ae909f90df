// myelin-studio: the desktop studio.
//
//   myelin-studio [PROJECT.myelin]
#include "main_window.h"
#include "theme.h"

#include <myelin/version.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QStringList>

#include <cstdio>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Myelin Studio"));
    QApplication::setApplicationVersion(QString::fromLatin1(myelin::version()));
    QApplication::setOrganizationName(QStringLiteral("Myelin"));
    QApplication::setOrganizationDomain(QStringLiteral("myelin.io"));
    QApplication::setDesktopFileName(QStringLiteral("myelin-studio"));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Myelin Studio: build and train neural networks."));
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

    myelin::ui::applyStudioTheme(app);
    myelin::ui::MainWindow window(positional.isEmpty() ? QString() : positional.first());
    window.show();
    return QApplication::exec();
}
