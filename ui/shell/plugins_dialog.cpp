#include "shell/plugins_dialog.h"

#include <myelin/plugin/loader.h>

#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace myelin::ui {

PluginsDialog::PluginsDialog(QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("pluginsDialog"));
    setWindowTitle(tr("Plugins"));
    const plugin::LoadReport report = plugin::plugin_report();

    QStringList folders;
    for (const auto& folder : plugin::plugin_search_path()) {
        const QString path = QString::fromStdString(folder.string());
        folders << (QFileInfo(path).isDir()
                        ? path.toHtmlEscaped()
                        : tr("%1 <i>(does not exist)</i>").arg(path.toHtmlEscaped()));
    }
    auto* intro = new QLabel(
        tr("Plugins add layers, losses, optimizers, schedules, data sources and transforms. "
           "They are loaded when the studio starts, from these folders in this order "
           "($MYELIN_PLUGIN_PATH first):<br>%1")
            .arg(folders.join(QStringLiteral("<br>"))),
        this);
    intro->setObjectName(QStringLiteral("pluginsFolders"));
    intro->setWordWrap(true);
    intro->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* tree = new QTreeWidget(this);
    tree->setObjectName(QStringLiteral("pluginsTree"));
    tree->setHeaderLabels({tr("Plugin"), tr("Version"), tr("File")});
    tree->setRootIsDecorated(true);
    tree->setAlternatingRowColors(true);
    for (const auto& p : report.loaded) {
        auto* item = new QTreeWidgetItem(tree, {QString::fromStdString(p.name),
                                                QString::fromStdString(p.version),
                                                QString::fromStdString(p.path)});
        item->setToolTip(0, QString::fromStdString(p.description));
        for (const auto& kind : p.kinds)
            new QTreeWidgetItem(item, {QString::fromStdString(kind)});
    }
    for (const auto& p : report.problems) {
        auto* item =
            new QTreeWidgetItem(tree, {QFileInfo(QString::fromStdString(p.path)).fileName(),
                                       tr("refused"), QString::fromStdString(p.path)});
        auto* why = new QTreeWidgetItem(item, {QString::fromStdString(p.message)});
        why->setFirstColumnSpanned(true);
        item->setToolTip(0, QString::fromStdString(p.message));
    }
    tree->expandAll();
    tree->header()->setSectionResizeMode(QHeaderView::ResizeToContents);

    auto* summary = new QLabel(this);
    summary->setObjectName(QStringLiteral("pluginsSummary"));
    summary->setWordWrap(true);
    summary->setText(report.loaded.empty() && report.problems.empty()
                         ? tr("No plugins are loaded. A plugin is a shared library (*.so) in one "
                              "of the folders above; plugins/example in the source tree is one.")
                         : tr("%n plugin(s) loaded", nullptr, int(report.loaded.size())) +
                               (report.problems.empty()
                                    ? QString()
                                    : tr(", %n refused (the reason is under each)", nullptr,
                                         int(report.problems.size()))) +
                               QLatin1Char('.'));

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addWidget(tree, 1);
    layout->addWidget(summary);
    layout->addWidget(buttons);
    resize(720, 420);
}

} // namespace myelin::ui
