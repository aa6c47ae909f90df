#pragma once
// The visual model editor: the canvas (GraphScene + GraphView) and the editing actions on it —
// delete, cut/copy/paste (the clipboard holds the selected nodes and the edges among them as the
// JSON of a partial model), duplicate, rename, disconnect, insert a layer on an edge, add a layer
// after the selection, quick-fixes and the automatic layout. Every action is one undo command.
#include "document/model_edits.h"

#include <myelin/graph/model_spec.h>

#include <QWidget>

#include <optional>
#include <vector>

class QAction;
class QMenu;

namespace myelin::ui {

class GraphScene;
class GraphView;
class StepScrubber;
class ProjectDocument;

class ModelEditor : public QWidget {
    Q_OBJECT

  public:
    // Clipboard format: {"nodes": [...], "edges": [...]} as in a project file's "model".
    static constexpr const char* kClipboardMimeType = "application/x-myelin-model+json";

    explicit ModelEditor(ProjectDocument* document, QWidget* parent = nullptr);

    GraphScene* scene() const { return scene_; }
    GraphView* view() const { return view_; }
    // Under the canvas: the recorded step the badges and inspection views show.
    StepScrubber* scrubber() const { return scrubber_; }

    // Adds the editing entries (with their shortcuts) to the Edit and View menus.
    void addEditActions(QMenu* menu);
    void addViewActions(QMenu* menu);

    // The context menu for what is at `scenePos`: a node (quick-fixes first), an edge, or the
    // empty canvas. The caller shows and deletes it.
    QMenu* createContextMenu(QPointF scenePos, QWidget* parent);

    // Adds a node of `kind` after the selected node, connected to it; with nothing selected, in
    // the middle of the view. Returns the new node's id (selected), or -1.
    graph::NodeId addLayerAfterSelection(const QString& kind);
    // Selects the node and scrolls it into the middle of the view.
    void focusNode(graph::NodeId id);
    // The quick-fixes for the node's current problems.
    std::vector<QuickFix> quickFixesFor(graph::NodeId id) const;

    // While locked (a run trains the model) the canvas can be looked at — zoom, pan, fit,
    // selection from the Problems panel — but not changed: no drags, drops, edits or menus.
    void setEditingLocked(bool locked);
    bool isEditingLocked() const { return locked_; }

    // The model fragment `json` holds (the clipboard's format), or nullopt when it is not one.
    static std::optional<graph::ModelSpec> fragmentFromJson(const QByteArray& json);
    static QByteArray fragmentToJson(const graph::ModelSpec& fragment);

  public slots:
    void deleteSelection();
    void cut();
    void copy();
    // Pastes the clipboard's nodes, offset from where they were copied.
    void paste();
    void duplicate();
    void renameSelected();
    void disconnectSelection();
    void arrangeLayers();
    void fitToWindow();

  signals:
    void statusMessage(const QString& text);

  private:
    void updateActions();
    void pasteFragment(const graph::ModelSpec& fragment, QPointF offset, const QString& verb);
    void removeSelection(const QString& verb);
    void showContextMenu(QPointF scenePos, QPoint globalPos);
    QAction* makeAction(const QString& text, const char* objectName, const QKeySequence& shortcut,
                        void (ModelEditor::*slot)());

    ProjectDocument* document_;
    GraphScene* scene_;
    GraphView* view_;
    StepScrubber* scrubber_ = nullptr;
    int pasteCount_ = 0;
    bool locked_ = false;

    QAction* cutAction_ = nullptr;
    QAction* copyAction_ = nullptr;
    QAction* pasteAction_ = nullptr;
    QAction* duplicateAction_ = nullptr;
    QAction* deleteAction_ = nullptr;
    QAction* renameAction_ = nullptr;
    QAction* disconnectAction_ = nullptr;
    QAction* selectAllAction_ = nullptr;
    QAction* arrangeAction_ = nullptr;
    QAction* zoomInAction_ = nullptr;
    QAction* zoomOutAction_ = nullptr;
    QAction* zoomResetAction_ = nullptr;
    QAction* fitAction_ = nullptr;
    QAction* snapAction_ = nullptr;
};

} // namespace myelin::ui
