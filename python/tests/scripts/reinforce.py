"""PyTorch's REINFORCE example (a policy MLP with dropout, distributions.Categorical, saved
log-probabilities, discounted returns normalised by mean and std, torch.cat(policy_loss).sum())
on a small hand-written environment: a corridor of 6 cells where the agent must walk right to
the goal within 20 steps."""
import argparse
import os
from itertools import count
from collections import deque

import numpy as np
import anygrad as torch                            # was: import torch
import anygrad.nn as nn                            # was: import torch.nn as nn
import anygrad.nn.functional as F                  # was: import torch.nn.functional as F
import anygrad.optim as optim                      # was: import torch.optim as optim
from anygrad.distributions import Categorical      # was: from torch.distributions import Categorical


parser = argparse.ArgumentParser(description='PyTorch REINFORCE example')
parser.add_argument('--gamma', type=float, default=0.99, metavar='G')
parser.add_argument('--seed', type=int, default=543, metavar='N')
parser.add_argument('--log-interval', type=int, default=10, metavar='N')
args = parser.parse_args()


class Corridor:
    """States 0..5, start at 0, goal at 5; actions 0 (left) and 1 (right); reward 1 at the goal,
    -0.05 per step; observation: a one-hot of the position plus a bias feature."""

    def __init__(self, length=6, limit=20):
        self.length, self.limit = length, limit
        self.rng = np.random.RandomState(0)

    def reset(self, seed=None):
        if seed is not None:
            self.rng = np.random.RandomState(seed)
        self.position, self.steps = 0, 0
        return self._observe(), {}

    def _observe(self):
        state = np.zeros(self.length + 1, dtype=np.float32)
        state[self.position] = 1.0
        state[-1] = 1.0
        return state

    def step(self, action):
        # a slippery floor: 10 % of moves go the other way
        if self.rng.rand() < 0.1:
            action = 1 - action
        self.position = max(0, self.position + (1 if action == 1 else -1))
        self.steps += 1
        terminated = self.position == self.length - 1
        truncated = self.steps >= self.limit
        reward = 1.0 if terminated else -0.05
        return self._observe(), reward, terminated, truncated, {}


env = Corridor()
env.reset(seed=args.seed)
torch.manual_seed(args.seed)


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(7, 64)
        self.dropout = nn.Dropout(p=0.2)
        self.affine2 = nn.Linear(64, 2)

        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


policy = Policy()
optimizer = optim.Adam(policy.parameters(), lr=1e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    policy_loss = []
    returns = deque()
    for r in policy.rewards[::-1]:
        R = r + args.gamma * R
        returns.appendleft(R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]


def main():
    running_reward = -1.0
    for i_episode in count(1):
        state, _ = env.reset()
        ep_reward = 0
        for t in range(1, 10000):  # Don't infinite loop while learning
            action = select_action(state)
            state, reward, done, truncated, _ = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
            if done or truncated:
                break

        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        finish_episode()
        if i_episode % args.log_interval == 0:
            print('Episode {}\tLast reward: {:.2f}\tAverage reward: {:.2f}'.format(
                  i_episode, ep_reward, running_reward))
        if running_reward > 0.6:
            print("Solved! Running reward is now {} and "
                  "the last episode runs to {} time steps!".format(running_reward, t))
            break
        if i_episode >= 300:
            raise SystemExit(f"not solved after {i_episode} episodes (running reward {running_reward:.2f})")


if __name__ == '__main__':
    main()
